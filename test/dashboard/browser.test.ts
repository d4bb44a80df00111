/**
 * The dashboard in headless Chromium against an in-process Sluice: signing in (and a wrong token
 * refused), landing on the page asked for, generating and revoking a token, signing out. Needs
 * Chromium (`apt-get install chromium`, which CI does); without it the test is skipped and says
 * so, unless SLUICE_REQUIRE_BROWSER is set.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Dashboard, startDashboard } from "../support/dashboard-harness";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, api, haveChromium, requireChromium, waitFor } from "../support/helpers";

requireChromium("dashboard-browser.test.ts");

let dash: Dashboard;
let s: TestServer;

beforeAll(async () => {
  if (!haveChromium) return;
  dash = await startDashboard();
  s = dash.s;
}, 60_000);

afterAll(() => dash?.stop());

/** Not signed in: these tests sign in through the /login form. */
const newPage = () => dash.newPage({ signedIn: false });

test.if(haveChromium)("sign in: a wrong token stays on /login with a message; the right pair opens the page asked for", async () => {
  const { context, page } = await newPage();
  await page.goto(`${s.url}/tokens`);
  await page.waitForURL(/\/login\?next=%2Ftokens$/);
  await page.getByLabel("Email", { exact: true }).fill(ADMIN_EMAIL);
  await page.getByLabel("Access token", { exact: true }).fill("not-the-token-0123456789");
  await page.getByLabel("Access token", { exact: true }).press("Enter");
  await page.getByRole("alert").getByText("Wrong e-mail or access token.").waitFor();
  expect(new URL(page.url()).pathname).toBe("/login");

  await page.getByLabel("Access token", { exact: true }).fill(ADMIN_TOKEN);
  await page.getByLabel("Access token", { exact: true }).press("Enter");
  await page.waitForURL(`${s.url}/tokens`);
  await page.getByRole("heading", { name: "Access tokens" }).waitFor();
  // The token lives nowhere the page's scripts could read it back.
  // (A string, so the server's type check needs no DOM types.)
  const stored: string = await page.evaluate("JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie");
  expect(stored).not.toContain(ADMIN_TOKEN);
  expect(stored).not.toContain("sluice_session");
  await context.close();
}, 60_000);

test.if(haveChromium)("tokens: generate one (shown once, usable at once), see it listed, revoke it; sign out ends the session", async () => {
  const { context, page } = await newPage();
  await page.goto(`${s.url}/login`);
  await page.getByLabel("Email", { exact: true }).fill(ADMIN_EMAIL);
  await page.getByLabel("Access token", { exact: true }).fill(ADMIN_TOKEN);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${s.url}/`);
  await page.getByRole("link", { name: "Tokens" }).click();
  await page.waitForURL(`${s.url}/tokens`);

  // A name that would be markup if it were rendered as HTML.
  const name = `<img src=x onerror=alert(1)> deploys`;
  await page.getByLabel("Name", { exact: true }).fill(name);
  await page.getByRole("button", { name: "Generate token" }).click();
  const secret = (await page.getByTestId("new-token").textContent())!.trim();
  expect(secret).toMatch(/^sluice_/);
  expect((await api(s.url, "GET", "/v2/sources", undefined, secret)).status).toBe(200);
  const row = page.getByRole("row").filter({ hasText: "deploys" });
  await row.waitFor();
  expect(await row.getByRole("cell").first().textContent()).toBe(name);
  expect(await page.locator("img").count()).toBe(0);

  page.once("dialog", (d) => d.accept());
  await row.getByRole("button", { name: /Revoke/ }).click();
  await row.waitFor({ state: "detached" });
  await waitFor(async () => (await api(s.url, "GET", "/v2/sources", undefined, secret)).status === 401, { what: "the revoked token to stop working" });

  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === "sluice_session")!;
  expect(session.httpOnly).toBe(true);
  expect(session.sameSite).toBe("Strict");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL(/\/login$/);
  const after = await fetch(`${s.url}/v2/session`, { headers: { cookie: `sluice_session=${session.value}` } });
  expect(after.status).toBe(401);
  await page.goto(`${s.url}/`);
  await page.waitForURL(/\/login\?next=%2F$/);
  await context.close();
}, 60_000);

test.if(haveChromium)("a narrow screen folds the navigation behind a menu button", async () => {
  const { context, page } = await newPage();
  await page.setViewportSize({ width: 390, height: 800 });
  await page.goto(`${s.url}/login`);
  await page.getByLabel("Email", { exact: true }).fill(ADMIN_EMAIL);
  await page.getByLabel("Access token", { exact: true }).fill(ADMIN_TOKEN);
  await page.getByLabel("Access token", { exact: true }).press("Enter");
  await page.waitForURL(`${s.url}/`);
  const tokensLink = page.getByRole("link", { name: "Tokens" });
  expect(await tokensLink.isVisible()).toBe(false);
  await page.getByRole("button", { name: "Menu" }).click();
  await tokensLink.click();
  await page.waitForURL(`${s.url}/tokens`);
  await context.close();
}, 60_000);
