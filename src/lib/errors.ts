/**
 * The one error type of Sluice. `code` decides the HTTP status; `message` is
 * written for the person who sent the request, and names the field at fault.
 */
export type ErrorCode =
  | "BAD_REQUEST"
  | "UNAUTHORIZED"
  | "FORBIDDEN"
  | "NOT_FOUND"
  | "CONFLICT"
  | "REQUEST_TIMEOUT"
  | "PAYLOAD_TOO_LARGE"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "TOO_MANY_REQUESTS"
  | "UNAVAILABLE"
  | "INTERNAL";

const STATUS: Record<ErrorCode, number> = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  // A body that did not arrive within --body-timeout-seconds; the connection is closed too.
  REQUEST_TIMEOUT: 408,
  // The spec answers oversized event calls with 400, so the gateway maps this code to 400;
  // elsewhere it is 413.
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  UNAVAILABLE: 503,
  INTERNAL: 500,
};

export class AppError extends Error {
  readonly code: ErrorCode;
  /** Extra fields merged into a JSON error body (e.g. the Test API's disabled-destination form). */
  readonly body?: Record<string, unknown>;
  /** Sent as `Retry-After` (seconds): when the caller may expect a retry to succeed (a full disk). */
  readonly retryAfterSeconds?: number;
  /** A refusal because the database could not be written: counted apart from other 503s. */
  readonly storage: boolean;

  constructor(code: ErrorCode, message: string, body?: Record<string, unknown>, opts: { retryAfterSeconds?: number; storage?: boolean } = {}) {
    super(message);
    this.name = "AppError";
    this.code = code;
    this.body = body;
    this.retryAfterSeconds = opts.retryAfterSeconds;
    this.storage = opts.storage === true;
  }

  get status(): number {
    return STATUS[this.code];
  }
}

export const badRequest = (message: string) => new AppError("BAD_REQUEST", message);
export const unauthorized = (message = "Unauthorized") => new AppError("UNAUTHORIZED", message);
export const notFound = (message: string) => new AppError("NOT_FOUND", message);
export const conflict = (message: string) => new AppError("CONFLICT", message);

export const statusOf = (code: ErrorCode) => STATUS[code];
