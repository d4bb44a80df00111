/**
 * The gateway asks this before storing an event: is its user under an active
 * suppression in this workspace (and for this source)? Regulations fill it.
 */
export interface Suppressor {
  /** True when the event must be dropped (answered 200, never stored). */
  isSuppressed(workspaceId: string, sourceId: string, userId: string): boolean;
}

/** Used until any regulation exists, and in tests of intake alone. */
export const noSuppression: Suppressor = { isSuppressed: () => false };
