/** The dashboard's own URLs: the pages link to each other's records and keep their state in the query string. */

export const sourcePath = (id: string) => `/sources/${encodeURIComponent(id)}`;
export const destinationPath = (id: string) => `/destinations/${encodeURIComponent(id)}`;
export const transformationPath = (id: string) => `/transformations/${encodeURIComponent(id)}`;

/** A path with some query keys set (or removed when empty), so a reload or a pasted link opens the same view. */
export function withQuery(path: string, query: Record<string, string>, changes: Record<string, string | undefined>): string {
  const q = new URLSearchParams(query);
  for (const [k, v] of Object.entries(changes)) {
    if (v) q.set(k, v);
    else q.delete(k);
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** A source's event catalog, and one of its models (`type`, and for a track its `event` name). */
export const eventsPath = (sourceId: string) => `/events?source=${encodeURIComponent(sourceId)}`;
export const livePath = (sourceId: string) => `/live?source=${encodeURIComponent(sourceId)}`;
export const trackingPlanPath = (id: string) => `/tracking-plans/${encodeURIComponent(id)}`;
