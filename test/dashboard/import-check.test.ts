/**
 * The dashboard's side of moving from RudderStack, in headless Chromium: the Import check page
 * (reached from the navigation) answers for a pasted workspace file what check-config prints,
 * with hostile names shown as text; a destination imported of a kind this server lacks is
 * badged Unsupported in the list and on its page. Needs Chromium, as dashboard-browser.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Dashboard, startDashboard } from "../support/dashboard-harness";
import { api, cleanup, haveChromium, requireChromium, tempDir } from "../support/helpers";

requireChromium("dashboard-import-check.test.ts");

const HOSTILE = "<img src=x onerror=alert(1)>";
const FIXTURE = join(import.meta.dir, "../fixtures", "rudderstack", "import.json");

let dash: Dashboard;
let dir: string;

beforeAll(async () => {
  if (!haveChromium) return;
  dir = tempDir();
  const file = join(dir, "workspaceConfig.json");
  writeFileSync(file, readFileSync(FIXTURE));
  dash = await startDashboard({ args: ["--config", file] });
}, 60_000);

afterAll(async () => {
  await dash?.stop();
  if (dir) await cleanup(dir);
});

test.if(haveChromium)("Import check: paste a RudderStack workspace file, read each entry's status and reason as text", async () => {
  const { context, page } = await dash.newPage();
  await page.goto(`${dash.s.url}/`);
  await page.getByRole("link", { name: "Import check" }).click();
  await page.getByRole("heading", { level: 1, name: "Import check" }).waitFor();
  const doc = JSON.parse(readFileSync(FIXTURE, "utf8"));
  doc.sources[0].destinations[0].name = `${HOSTILE} archive`;
  await page.getByLabel("Or paste it").fill(JSON.stringify(doc));
  await page.getByRole("button", { name: "Check" }).click();
  await page.getByRole("status").getByText("RudderStack's workspaceConfig.json: 4 run, 1 device mode, 5 held, 0 config errors.").waitFor();
  const row = page.getByRole("row", { name: new RegExp(`${HOSTILE.replace(/[()]/g, "\\$&")} archive`) });
  expect(await row.getByRole("cell").allTextContents()).toEqual([
    "destination",
    `${HOSTILE} archive`,
    "GCS",
    "Held",
    "unsupported kind 'GCS' (Google Cloud Storage): kept with its config, receives nothing and queues nothing until a Sluice version has the kind.",
  ]);
  await page.getByRole("row", { name: /Product analytics \(browser\)/ }).getByText("Device mode", { exact: true }).waitFor();
  // Not JSON: said on the page, nothing sent.
  await page.getByLabel("Or paste it").fill("sources: []");
  await page.getByRole("button", { name: "Check" }).click();
  await page.getByRole("alert").getByText(/^The file is not valid JSON/).waitFor();
  await context.close();
});

test.if(haveChromium)("a destination of a kind this server lacks is badged Unsupported in the list and on its page", async () => {
  const { context, page } = await dash.newPage();
  const s3 = (await api(dash.s.url, "GET", "/v2/destinations")).json.destinations.find((d: any) => d.type === "GCS");
  await page.goto(`${dash.s.url}/destinations`);
  await page.getByRole("row", { name: /Raw events archive/ }).getByText("Unsupported").waitFor();
  expect(await page.getByRole("row", { name: /Order hook/ }).getByText("Unsupported").count()).toBe(0);
  await page.goto(`${dash.s.url}/destinations/${s3.id}`);
  await page.getByText("This server has no destination kind GCS.").waitFor();
  await context.close();
});
