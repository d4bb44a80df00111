export interface EventRow {
  workspaceId: string;
  sourceId: string;
  messageId: string;
  userKey: string;
  type: string;
  payload: string;
  receivedAt: number;
}

/**
 * Rows cross to the storage thread as one string of length-prefixed fields
 * (`<length>:<text>`, seven per row): copying one string is far cheaper than
 * structured-cloning arrays, and lengths need no escaping of user data.
 */
export function encodeRow(r: EventRow): string {
  const t = String(r.receivedAt);
  return (
    `${r.workspaceId.length}:${r.workspaceId}${r.sourceId.length}:${r.sourceId}${r.messageId.length}:${r.messageId}` +
    `${r.userKey.length}:${r.userKey}${r.type.length}:${r.type}${r.payload.length}:${r.payload}${t.length}:${t}`
  );
}

/** The inverse of encodeRow over a whole message; calls `row` with the seven fields. */
export function decodeRows(s: string, row: (f: string[]) => void) {
  let i = 0;
  const f: string[] = new Array(7);
  while (i < s.length) {
    for (let k = 0; k < 7; k++) {
      const colon = s.indexOf(":", i);
      const len = Number(s.slice(i, colon));
      f[k] = s.slice(colon + 1, colon + 1 + len);
      i = colon + 1 + len;
    }
    row(f);
  }
}
