/**
 * What the server adds to every accepted event: its type, a messageId, the four
 * timestamps (normalised to yyyy-MM-ddTHH:mm:ss.SSSZ, with the client's clock skew
 * corrected), and the sender's IP.
 */
export interface RequestMeta {
  receivedAt: number;
  ip: string;
  /** Batch-level sentAt, applied to entries without their own. */
  batchSentAt?: string;
  batchContext?: Record<string, unknown>;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function enrichEvent(event: Record<string, any>, type: string, meta: RequestMeta): Record<string, any> {
  event.type = type;
  if (typeof event.messageId !== "string" || event.messageId === "") event.messageId = crypto.randomUUID();
  // The write key authenticates the request; it must not travel on to destinations.
  delete event.writeKey;

  const received = meta.receivedAt;
  const sentAtRaw = event.sentAt ?? meta.batchSentAt;
  const sent = sentAtRaw ? Date.parse(sentAtRaw) : received;
  const original = event.originalTimestamp ? Date.parse(event.originalTimestamp) : sent;
  event.receivedAt = iso(received);
  event.sentAt = iso(sent);
  event.originalTimestamp = iso(original);
  // A timestamp the client sent is historical data and kept; otherwise the client's
  // time is shifted by its clock's skew against ours.
  event.timestamp = event.timestamp ? iso(Date.parse(event.timestamp)) : iso(received - (sent - original));

  if (meta.batchContext && event.context === undefined) event.context = { ...meta.batchContext };
  if (event.context === undefined) event.context = {};
  if (meta.ip) {
    if (typeof event.context.ip !== "string" || event.context.ip === "") event.context.ip = meta.ip;
    event.request_ip = meta.ip;
  }
  return event;
}
