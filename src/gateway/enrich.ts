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
  /**
   * Events a webhook mapping made: a `receivedAt` and a string `request_ip` of their own are
   * kept, as rudder-server's gateway keeps them (Auth0's events carry the user's address).
   */
  keepOwn?: boolean;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The id a user's events are ordered and partitioned by, and the one regulations name: the
 * userId, else the anonymousId, as text. A number sent as an id stays a number in the event
 * (rudder-server passes it on so, and destinations see 42, not "42"); only this key is its
 * decimal string (42 → "42", 1e21 → "1000000000000000000000", not "1e+21").
 */
export function idText(id: unknown): string | undefined {
  if (typeof id === "string") return id === "" ? undefined : id;
  if (typeof id === "number" && Number.isFinite(id)) return Number.isInteger(id) ? BigInt(id).toString() : String(id);
  return undefined;
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
  // A missing originalTimestamp is the time received, not sentAt: rudder-server's processor
  // defaults both to receivedAt, so such an event's timestamp moves back by sentAt's skew.
  const original = event.originalTimestamp ? Date.parse(event.originalTimestamp) : received;
  if (!(meta.keepOwn && typeof event.receivedAt === "string")) event.receivedAt = receivedIso;
  event.sentAt = sent === received ? receivedIso : iso(sent);
  event.originalTimestamp = original === received ? receivedIso : iso(original);
  // A timestamp the client sent is historical data and kept; otherwise the client's
  // time is shifted by its clock's skew against ours.
  const corrected = received - (sent - original);
  event.timestamp = event.timestamp ? iso(Date.parse(event.timestamp)) : corrected === received ? receivedIso : iso(corrected);

  if (meta.batchContext && event.context === undefined) event.context = { ...meta.batchContext };
  if (event.context === undefined) event.context = {};
  const ip = meta.keepOwn && typeof event.request_ip === "string" ? event.request_ip : meta.ip;
  if (ip) {
    if (typeof event.context.ip !== "string" || event.context.ip === "") event.context.ip = ip;
    event.request_ip = ip;
  }
  return event;
}
