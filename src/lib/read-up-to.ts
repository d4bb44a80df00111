import { AppError } from "./errors";

/**
 * Reads a body stream until it ends or passes `limit` bytes, whichever comes first, so that a
 * peer cannot make Sluice hold more than about `limit` of one body (event calls, API calls, a
 * destination's answer). Past the limit the stream is cancelled and `over` is set.
 */
export async function readUpTo(stream: ReadableStream<Uint8Array> | null, limit: number): Promise<{ bytes: Uint8Array; over: boolean }> {
  if (!stream) return { bytes: new Uint8Array(0), over: false };
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size > limit) {
      reader.cancel().catch(() => {});
      return { bytes: Buffer.concat(chunks), over: true };
    }
  }
  return { bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), over: false };
}

/**
 * A body read that fails is a client that went away or ran past the body deadline (Bun closes the
 * connection: gateway/routes.ts, bodyDeadline); either way a 408 that nobody may read, not a 500.
 */
export async function bodyRead<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch {
    throw new AppError("REQUEST_TIMEOUT", "the request body did not arrive in time, or the connection closed before it ended");
  }

}
