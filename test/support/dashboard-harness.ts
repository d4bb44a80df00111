/**
 * What every dashboard browser test file sets up: the pages built into a temp folder of its own
 * (files running at once never share one), an in-process Sluice serving them with
 * --dashboard-dir, headless Chromium, pages signed in or not, and the rule that a script error,
 * a console error (CSP violations are reported there) or an alert() (a hostile value run as
 * markup) on any page fails the run. `stop()` cleans up and then applies that rule.
 */
import { expect } from "bun:test";
import { buildDashboard } from "../../scripts/build-dashboard";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, cleanup, haveChromium, launchChromium, startSluice, tempDir } from "./helpers";

export type Page = import("playwright-core").Page;
export type BrowserContext = import("playwright-core").BrowserContext;

/**
 * Chromium logs every fetch answered 4xx/5xx as a console error "Failed to load resource: …";
 * the pages' own API calls meet such answers on purpose (401 before sign-in, a refused form's
 * 400, a probed 404) and show them on the page, where the tests check them. Only those are let
 * through: a page, script, style, image or icon (the favicon included) that fails to load is
 * an error like any other.
 */
const FAILED_RESOURCE = /^Failed to load resource/;
const API_CALLS = new Set(["fetch", "xhr", "eventsource"]);

export interface Dashboard {
  s: TestServer;
  /** The built pages (for another server's --dashboard-dir); undefined when not built. */
  dashboardDir: string | undefined;
  /** The built files, relative to dashboardDir. */
  files: string[];
  /** Undefined where Chromium is missing (the file's browser tests are skipped then). */
  browser: import("playwright-core").Browser | undefined;
  /** Everything the pages reported that fails the run; checked by `stop()`. */
  pageErrors: string[];
  /**
   * A page in a context of its own, watched for errors: signed in (by default) with a fresh
   * session from POST /v2/session as the login form would get it, `width` × 800 (default 1280).
   * `serverUrl` signs in against and opens another server (default: this one).
   */
  newPage(opts?: { signedIn?: boolean; width?: number; serverUrl?: string }): Promise<{ context: BrowserContext; page: Page }>;
  /** Closes the browser, stops Sluice, removes its folders, then fails if any page reported an error. */
  stop(): Promise<void>;
}

/**
 * Builds the dashboard, starts Sluice with `--dashboard-dir` and `args`, and launches Chromium
 * while the pages build. `browser` (default: whether Chromium is installed) says whether to launch
 * it, `build` (default: as `browser`) whether to build the pages: without either only Sluice starts
 * (with `args`), for a file's tests that need no browser.
 */
export async function startDashboard(opts: { args?: string[]; browser?: boolean; build?: boolean } = {}): Promise<Dashboard> {
  const launch = opts.browser ?? haveChromium;
  const dashboardDir = (opts.build ?? launch) ? tempDir("sluice-dashboard-") : undefined;
  const launching = launch ? launchChromium() : undefined;
  let files: string[] = [];
  let s: TestServer;
  try {
    if (dashboardDir) files = (await buildDashboard(dashboardDir)).files;
    s = await startSluice({ args: [...(dashboardDir ? ["--dashboard-dir", dashboardDir] : []), ...(opts.args ?? [])] });
  } catch (e) {
    await (await launching)?.close();
    if (dashboardDir) cleanup(dashboardDir);
    throw e;
  }
  const browser = await launching;

  const pageErrors: string[] = [];
  function watch(page: Page) {
    // A request is seen before the console reports its failure, so the URL is known by then.
    const apiCalls = new Set<string>();
    page.on("request", (r) => {
      if (API_CALLS.has(r.resourceType())) apiCalls.add(r.url());
    });
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    page.on("console", (m) => {
      if (m.type() !== "error") return;
      if (FAILED_RESOURCE.test(m.text()) && apiCalls.has(m.location().url)) return;
      pageErrors.push(`${m.text()} (${m.location().url || page.url()})`);
    });
    // alert() would mean a hostile value ran as markup; other dialogs are the tests' to answer.
    page.on("dialog", (d) => {
      if (d.type() !== "alert") return;
      pageErrors.push(`alert: ${d.message()}`);
      void d.dismiss();
    });
  }

  async function signIn(serverUrl = s.url) {
    const res = await fetch(`${serverUrl}/v2/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: ADMIN_EMAIL, token: ADMIN_TOKEN }) });
    expect(res.status).toBe(200);
    return /sluice_session=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")![1]!;
  }

  return {
    s,
    dashboardDir,
    files,
    browser,
    pageErrors,
    async newPage({ signedIn = true, width = 1280, serverUrl = s.url } = {}) {
      if (!browser) throw new Error("no Chromium: this test should have been skipped (test.if(haveChromium))");
      const context = await browser.newContext({ viewport: { width, height: 800 } });
      if (signedIn) await context.addCookies([{ name: "sluice_session", value: await signIn(serverUrl), url: serverUrl, httpOnly: true, sameSite: "Strict" }]);
      const page = await context.newPage();
      watch(page);
      return { context, page };
    },
    async stop() {
      await browser?.close();
      await s.stop();
      cleanup(s.dataDir);
      if (dashboardDir) cleanup(dashboardDir);
      // A CSP violation, a script error or an alert on any page fails the run.
      expect(pageErrors).toEqual([]);
    },
  };
}
