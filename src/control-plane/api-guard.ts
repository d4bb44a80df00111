/**
 * What the API decides before it reads a request's body. Elysia reads and parses a body before
 * every route hook but the parse hook, so without this an unauthenticated client could make the
 * server buffer any body it liked (six 120 MB sign-ins took 2 GB). The API's parse hook refuses, from
 * the headers alone, a Content-Length over the route's limit (413) and wrong credentials (401)
 * and, for the sign-in, a body that is not JSON (415) or a page of another origin (403); then it
 * reads the body itself, at most up to the limit, whatever the length declared or not.
 *
 * Route hooks, not an onRequest hook: the refusals are answered, logged and counted under their
 * route like any other, and nothing runs for the event calls (/v1, /beacon), which bound their
 * own bodies (gateway/read-body.ts) on the data plane.
 */
import type { Elysia } from "elysia";
import { AppError } from "../lib/errors";
import { parseJsonShaped, shapeLimitsFor } from "../lib/json-shape";
import { firstError } from "../lib/schema";
import type { TSchema } from "@sinclair/typebox";
import { bodyRead, readUpTo } from "../lib/read-up-to";
import type { RequestPeer } from "../lib/slow-bodies";
import type { ServiceContext } from "./context";
import { assertSameOrigin, authenticateRequest } from "./auth";
import { clientAddress } from "./auth-throttle";

const MB = 1024 * 1024;
/** Every API body is a small JSON document; the Test API's carry a message and a destination config. */
export const API_BODY_LIMIT = 1 * MB;
export const TEST_BODY_LIMIT = 4 * MB;

/** The one route that takes a body without credentials. */
export const SIGN_IN_PATH = "/v2/session";

/** The Test API and the transformation test run carry whole events and configs: 4 MB; the rest 1 MB. */
export function bodyLimitFor(route: string): number {
  return route.startsWith("/v0/test") || route === "/v2/transformations/test" ? TEST_BODY_LIMIT : API_BODY_LIMIT;
}

const tooLarge = (limit: number) => new AppError("PAYLOAD_TOO_LARGE", `request body is larger than the ${limit / MB} MB this route accepts`);

/** Every /v2 and /v0 route needs credentials, except the sign-in itself. */
function needsCredentials(route: string): boolean {
  return (route.startsWith("/v2/") || route.startsWith("/v0/")) && route !== SIGN_IN_PATH;
}

/** Reads at most `limit` bytes; a body that goes on is cancelled and refused. */
export async function readCapped(request: Request, limit: number): Promise<Uint8Array> {
  const { bytes, over } = await bodyRead(readUpTo(request.body, limit));
  if (over) throw tooLarge(limit);
  return bytes;
}

/**
 * Decodes a body by its Content-Type as Elysia's own parser does, near enough: every API route
 * takes JSON, the other types only have to fail validation the same way.
 */
async function decodeBody(bytes: Uint8Array, contentType: string, fullContentType: string, limit: number): Promise<unknown> {
  const text = () => new TextDecoder().decode(bytes);
  switch (contentType) {
    case "application/json":
      // Shape first (lib/json-shape.ts): nothing after this point walks a body deeper or larger.
      return parseJsonShaped(text(), shapeLimitsFor(limit));
    case "application/x-www-form-urlencoded":
      return Object.fromEntries(new URLSearchParams(text()));
    case "application/octet-stream":
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    case "multipart/form-data": {
      const form = await new Response(bytes, { headers: { "content-type": fullContentType } }).formData();
      const body: Record<string, unknown> = {};
      for (const key of new Set(form.keys())) {
        const values = form.getAll(key);
        body[key] = values.length === 1 ? values[0] : values;
      }
      return body;
    }
    default:
      return contentType.startsWith("text/") ? text() : undefined;
  }
}

type Peer = RequestPeer;

/**
 * Installs the guard on the API app, before its routes: a parse hook (routes that read a body)
 * and a transform hook (the rest, so every failed credential is counted against its address).
 * Either authenticates once; the routes' own authentication finds the answer (control-plane/auth.ts).
 */
export function guarded<T extends Elysia<any, any, any, any, any, any, any>>(app: T, ctx: ServiceContext): T {
  const trustProxy = ctx.trustProxy ?? false;
  const authenticateFirst = async (request: Request, route: string, server: Peer) => {
    if (needsCredentials(route)) await authenticateRequest(ctx, request, route.startsWith("/v0/") ? "basic" : "bearer-or-basic", clientAddress(request, server, trustProxy));
  };
  // Filled at the first request, once every route of the app is registered.
  let schemas: Map<string, TSchema> | undefined;
  const bodySchemas = () => (schemas ??= routeBodySchemas(app));
  return app
    .onParse(async ({ request, route, server }, contentType) => {
      const limit = bodyLimitFor(route);
      const declared = request.headers.get("content-length");
      if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
      await authenticateFirst(request, route, server);
      if (route === SIGN_IN_PATH && request.method === "POST") {
        // An HTML form on another site can post form fields (and sign the browser in to the
        // attacker's account: login CSRF), never JSON; a page of another origin says so in Origin.
        if (contentType.toLowerCase() !== "application/json") throw new AppError("UNSUPPORTED_MEDIA_TYPE", "sign-in takes a JSON body: send Content-Type: application/json");
        assertSameOrigin(request, { trustProxy, originRequired: false });
      }
      // Past the deadline Bun closes the connection, however slowly the body still trickles in;
      // one address may have only so many arriving (lib/slow-bodies.ts).
      const read = () => readCapped(request, limit);
      const bytes = await (ctx.slowBodies ? ctx.slowBodies.wait(request, server, read) : read());
      return decodeBody(bytes, contentType.toLowerCase(), request.headers.get("content-type") ?? "", limit);
    })
    .onTransform(async ({ request, route, server, body }) => {
      await authenticateFirst(request, route, server);
      if (body !== undefined) checkBody(bodySchemas(), request.method, route, body);
    }) as T;
}

/** Each route's body schema, by `METHOD path`, as the routes declared them. */
function routeBodySchemas(app: Elysia<any, any, any, any, any, any, any>): Map<string, TSchema> {
  const out = new Map<string, TSchema>();
  for (const r of app.routes) {
    const body = (r.hooks as { body?: unknown } | undefined)?.body;
    if (body && typeof body === "object") out.set(`${r.method} ${r.path}`, body as TSchema);
  }
  return out;
}

/**
 * Validates a body against its route's schema before Elysia does, and refuses it with our own
 * 400. Elysia's validation error writes the whole refused value into its message, indented
 * (JSON.stringify(…, null, 2)): for a body nested d levels that is d² characters, so one 40 KB
 * sign-in held the server for seconds. With this check first, Elysia only ever validates bodies
 * that pass, and the refusal costs one schema check and one path.
 */
function checkBody(schemas: Map<string, TSchema>, method: string, route: string, body: unknown): void {
  const schema = schemas.get(`${method} ${route}`);
  if (!schema) return;
  const error = firstError(schema, body);
  if (error !== undefined) throw new AppError("BAD_REQUEST", error);
}
