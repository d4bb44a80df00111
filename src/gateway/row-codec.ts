export interface EventRow {
  workspaceId: string;
  sourceId: string;
  messageId: string;
  userKey: string;
  type: string;
  payload: string;
  receivedAt: number;
}

const TEXT_FIELDS = 6;
/** Per row: an (offset, length) pair per text field, then receivedAt. */
const SLOTS = TEXT_FIELDS * 2 + 1;
const encoder = new TextEncoder();

/**
 * Rows cross to the storage thread as UTF-8 bytes in one transferable buffer plus an
 * index of (offset, length) pairs: the transfer copies nothing, the storage thread makes
 * no JavaScript strings (it binds byte ranges and SQLite casts them to TEXT), and
 * lengths need no escaping of user data.
 */
export class RowBatch {
  bytes: Uint8Array;
  index: Float64Array;
  rows = 0;
  used = 0;

  /** Sized for a few single calls; a batch request grows it once or twice. */
  constructor(bytes = 8 * 1024, rows = 16) {
    this.bytes = new Uint8Array(bytes);
    this.index = new Float64Array(rows * SLOTS);
  }

  add(r: EventRow) {
    const fields = [r.workspaceId, r.sourceId, r.messageId, r.userKey, r.type, r.payload];
    let worst = 0;
    for (const f of fields) worst += f.length * 3;
    if (this.used + worst > this.bytes.length) {
      const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.used + worst));
      grown.set(this.bytes.subarray(0, this.used));
      this.bytes = grown;
    }
    if ((this.rows + 1) * SLOTS > this.index.length) {
      const grown = new Float64Array(this.index.length * 2);
      grown.set(this.index);
      this.index = grown;
    }
    const base = this.rows * SLOTS;
    for (let k = 0; k < TEXT_FIELDS; k++) {
      const { written } = encoder.encodeInto(fields[k], this.bytes.subarray(this.used));
      this.index[base + k * 2] = this.used;
      this.index[base + k * 2 + 1] = written;
      this.used += written;
    }
    this.index[base + TEXT_FIELDS * 2] = r.receivedAt;
    this.rows++;
  }
}

/** Calls `row` with the six text fields as byte ranges, and receivedAt. */
export function readRows(bytes: Uint8Array, index: Float64Array, rows: number, row: (f: Uint8Array[], receivedAt: number) => void) {
  const f: Uint8Array[] = new Array(TEXT_FIELDS);
  for (let i = 0; i < rows; i++) {
    const base = i * SLOTS;
    for (let k = 0; k < TEXT_FIELDS; k++) {
      const off = index[base + k * 2];
      f[k] = bytes.subarray(off, off + index[base + k * 2 + 1]);
    }
    row(f, index[base + TEXT_FIELDS * 2]);
  }
}
