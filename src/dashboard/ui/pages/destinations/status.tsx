/**
 * What the list and one destination's page both show of a destination's state: held (its
 * transformation's code is not here) or of a kind this server lacks, and the definitions of the
 * kinds. Names come from users: they are rendered as text only.
 */
import { api } from "../../api";
import { Badge } from "../../components";
import { useResource } from "../../hooks";
import type { Destination } from "../../types";
import type { Definition } from "./config-form";

export function useDefinitions() {
  const { data: defs, error } = useResource(() => api<Definition[]>("GET", "/destination-definitions"));
  return { defs, error };
}

/** Why the API says the destination is held (its transformation's code is not here). */
export const heldReasonOf = (d: Destination) => d.heldReason ?? null;

export function HeldBadge({ reason }: { reason: string }) {
  return (
    <span title={`Held: ${reason}. Its events queue; nothing is delivered untransformed.`}>
      <Badge tone="warn">Held</Badge>
    </span>
  );
}

/** A destination of a kind this server lacks (imported from a workspace file): it receives nothing. */
export const UNSUPPORTED = "This server has no destination of this kind: it is kept and receives nothing";
