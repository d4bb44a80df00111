/**
 * What the server adds to every accepted event: its type, a messageId, the four
 * timestamps (normalised to yyyy-MM-ddTHH:mm:ss.SSSZ, with the client's clock skew
 * corrected), and the sender's IP.
 */
export interface RequestMeta {
  receivedAt: number;
  /** receivedAt formatted once per request: every event of a batch shares it. */
  receivedAtIso?: string;
  ip: string;
  /** Batch-level sentAt, applied to entries without their own. */
  batchSentAt?: string;
  batchContext?: Record<string, unknown>;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * RudderStack accepts a number as userId or anonymousId (its gateway reads ids as strings),
 * so SDKs and backends that send `userId: 42` keep working: the id becomes "42" before
 * validation, and every later step (suppression, per-user order, destinations) sees the string.
 */
export function stringifyNumericIds(call: Record<string, any>): void {
  if (typeof call.userId === "number") call.userId = decimalString(call.userId);
  if (typeof call.anonymousId === "number") call.anonymousId = decimalString(call.anonymousId);
}

/** 42 → "42", 1e21 → "1000000000000000000000" (not "1e+21"); NaN and Infinity stay numbers and fail validation. */
function decimalString(n: number): string | number {
  if (!Number.isFinite(n)) return n;
  return Number.isInteger(n) ? BigInt(n).toString() : String(n);
}

export function enrichEvent(event: Record<string, any>, type: string, meta: RequestMeta): Record<string, any> {
  event.type = type;
  if (typeof event.messageId !== "string" || event.messageId === "") event.messageId = crypto.randomUUID();
  // The write key authenticates the request; it must not travel on to destinations.
  // (Only deleted when present: a delete turns the object into a slower dictionary.)
  if (event.writeKey !== undefined) delete event.writeKey;

  const received = meta.receivedAt;
  const receivedIso = (meta.receivedAtIso ??= iso(received));
  const sentAtRaw = event.sentAt ?? meta.batchSentAt;
  const sent = sentAtRaw ? Date.parse(sentAtRaw) : received;
  const original = event.originalTimestamp ? Date.parse(event.originalTimestamp) : sent;
  event.receivedAt = receivedIso;
  event.sentAt = sent === received ? receivedIso : iso(sent);
  event.originalTimestamp = original === received ? receivedIso : iso(original);
  // A timestamp the client sent is historical data and kept; otherwise the client's
  // time is shifted by its clock's skew against ours.
  const corrected = received - (sent - original);
  event.timestamp = event.timestamp ? iso(Date.parse(event.timestamp)) : corrected === received ? receivedIso : iso(corrected);

  if (meta.batchContext && event.context === undefined) event.context = { ...meta.batchContext };
  if (event.context === undefined) event.context = {};
  if (meta.ip) {
    if (typeof event.context.ip !== "string" || event.context.ip === "") event.context.ip = meta.ip;
    event.request_ip = meta.ip;
  }
  return event;
}
