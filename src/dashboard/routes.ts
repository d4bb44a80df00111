/**
 * The dashboard: sign-in sessions (`/v2/session`), its pages and their assets. Pages are the
 * same index.html; the browser-side router draws the page the URL names, so a reload or a
 * pasted link opens the same view.
 */
import { Elysia, t } from "elysia";
import { authenticateRequest } from "../control-plane/auth";
import { clientAddress } from "../control-plane/auth-throttle";
import type { Principal } from "../control-plane/tokens";
import type { AuthContext } from "../control-plane/context";
import { DashboardAssets, SECURITY_HEADERS } from "./assets";
import { sessionCookie, sessionIdFrom, sessionPrincipal, signIn, signOut } from "../control-plane/sessions";
import FAVICON from "./ui/favicon.svg" with { type: "text" };

/** Every page the dashboard has; anything else under these prefixes is the page's own business. */
export const PAGES = [
  "/",
  "/sources",
  "/sources/:id",
  "/destinations",
  "/destinations/:id",
  "/transformations",
  "/transformations/:id",
  "/live",
  "/events",
  "/tracking-plans",
  "/tracking-plans/:id",
  "/test",
  "/regulations",
  "/tokens",
  "/import-check",
];

const SignIn = t.Object(
  {
    email: t.String({ minLength: 1, maxLength: 320, description: "The account's e-mail address" }),
    token: t.String({ minLength: 1, maxLength: 500, description: "A personal access token of that account" }),
  },
  { additionalProperties: false },
);
const Session = t.Object({ email: t.String(), workspaceId: t.String(), expiresAt: t.String({ format: "date-time" }) });

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>Sluice</title><p>The dashboard is not built in this checkout: run <code>npm run build:dashboard</code> (npm start and npm run build do it for you).</p>`;

export function dashboardRoutes(ctx: AuthContext, assets: DashboardAssets) {
  const trustProxy = ctx.trustProxy ?? false;
  const detail = (summary: string, description: string) => ({ tags: ["Dashboard"], summary, description });

  const page = async ({ request }: { request: Request }) => {
    const url = new URL(request.url);
    if (url.pathname !== "/login" && !(await sessionPrincipal(ctx, sessionIdFrom(request.headers.get("cookie"))))) {
      const next = url.pathname + url.search;
      return new Response(null, { status: 302, headers: { ...SECURITY_HEADERS, Location: `/login?next=${encodeURIComponent(next)}`, "Cache-Control": "no-store" } });
    }
    const html = await assets.response("index.html", request.headers.get("accept-encoding"), { ...SECURITY_HEADERS, "Cache-Control": "no-cache" });
    return html ?? new Response(NOT_BUILT, { status: 503, headers: { ...SECURITY_HEADERS, "Content-Type": "text/html; charset=utf-8" } });
  };

  // A fixed name, not hashed, and embedded as text: browsers ask for the icon by the name they remember.
  const favicon = () =>
    new Response(FAVICON, { headers: { ...SECURITY_HEADERS, "Content-Type": "image/svg+xml", "Cache-Control": "public, max-age=86400" } });

  const app = new Elysia({ name: "dashboard" })
    .post(
      "/v2/session",
      // Its Content-Type (JSON only) and Origin were checked before the body was read (control-plane/api-guard.ts).
      async ({ request, body, set, server }) => {
        const { id, principal, expiresAt } = await signIn(ctx, body, clientAddress(request, server, trustProxy));
        set.headers["set-cookie"] = sessionCookie(request, id, ctx.sessionHours * 3600, trustProxy);
        return { email: principal.email, workspaceId: principal.workspaceId, expiresAt: new Date(expiresAt).toISOString() };
      },
      {
        body: SignIn,
        response: { 200: Session },
        detail: detail(
          "Sign in to the dashboard",
          "Checks the e-mail and access token and answers with an HttpOnly, SameSite=Strict session cookie valid for `--session-hours`. The token is not kept in the browser; a wrong pair answers 401 without saying which part was wrong, and after 10 wrong pairs from one address within a minute 429 with Retry-After. The body must be JSON (`Content-Type: application/json`, else 415, so an HTML form on another site cannot sign a browser in), and an `Origin` header, when sent, must be this server (else 403).",
        ),
      },
    )
    .get(
      "/v2/session",
      async ({ request, server }) => {
        // authenticateRequest looks the session up and checks it; its principal carries the expiry.
        const p: Principal & { expiresAt?: number } = await authenticateRequest(ctx, request, "bearer-or-basic", clientAddress(request, server, trustProxy));
        return { email: p.email, workspaceId: p.workspaceId, expiresAt: new Date(p.expiresAt ?? ctx.now()).toISOString() };
      },
      { response: { 200: Session }, detail: detail("Who is signed in", "The session's account and when it expires; 401 when there is no session.") },
    )
    .delete(
      "/v2/session",
      async ({ request, set, server }) => {
        const id = sessionIdFrom(request.headers.get("cookie"));
        if (id) await authenticateRequest(ctx, request, "bearer-or-basic", clientAddress(request, server, trustProxy));
        await signOut(ctx, id);
        set.headers["set-cookie"] = sessionCookie(request, "", 0, trustProxy);
        set.status = 204;
      },
      { detail: detail("Sign out", "Ends the session on the server and clears the cookie.") },
    )
    .get("/assets/*", async ({ params, request }) => {
      const res = await assets.response(`assets/${params["*"]}`, request.headers.get("accept-encoding"), {
        ...SECURITY_HEADERS,
        // File names carry their content's hash: a changed file is a new name.
        "Cache-Control": "public, max-age=31536000, immutable",
      });
      return res ?? new Response(JSON.stringify({ message: `no dashboard asset '${params["*"]}'` }), { status: 404, headers: { "Content-Type": "application/json" } });
    }, { detail: { hide: true } })
    // /favicon.ico too: pages outside the dashboard (the OpenAPI, an API answer opened in a tab) ask for that name.
    .get("/favicon.svg", favicon, { detail: { hide: true } })
    .get("/favicon.ico", favicon, { detail: { hide: true } })
    .get("/login", page, { detail: { hide: true } });
  // Registered one by one, so a path that is not a page keeps the API's JSON 404.
  for (const path of PAGES) app.get(path, page, { detail: { hide: true } });
  return app;
}
