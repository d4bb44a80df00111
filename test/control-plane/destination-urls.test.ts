/**
 * Destination URLs are http or https only, checked when a config is saved (API and workspace
 * file) and when the Test API runs one: a `file:` webhook URL would have the server read its
 * own files for whoever can write a destination; `gopher:` or `ftp:` speak other protocols.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readWorkspaceFile } from "../../src/control-plane/workspace-file";
import { listDefinitions, urlKeysOf } from "../../src/destinations/registry";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, api, basic, cleanup, startSink, startSluice } from "../support/helpers";

let s: TestServer;
const sink = startSink();

beforeAll(async () => {
  s = await startSluice();
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  await cleanup(s.dataDir);
});

const name = () => `d-${crypto.randomUUID().slice(0, 8)}`;

async function testDestination(id: string, destinationConfig: Record<string, unknown>) {
  const res = await fetch(`${s.url}/v0/testDestination/${id}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: basic(ADMIN_EMAIL, ADMIN_TOKEN) },
    body: JSON.stringify({ message: { type: "track", userId: "u1", event: "Leak" }, destinationConfig }),
  });
  return { status: res.status, json: (await res.json()) as any };
}

/** Refused everywhere a config enters: create, update, the Test API and a workspace file. */
async function expectRefused(type: string, base: Record<string, unknown>, bad: Record<string, unknown>, reason: string) {
  const key = Object.keys(bad)[0]!;
  const config = { ...base, ...bad };
  const created = await api(s.url, "POST", "/v2/destinations", { name: name(), type, config });
  expect(`${type} ${JSON.stringify(bad)} → ${created.status} ${created.json?.message}`).toBe(`${type} ${JSON.stringify(bad)} → 400 config.${key}: ${reason}`);

  const ok = await api(s.url, "POST", "/v2/destinations", { name: name(), type, config: base });
  expect(ok.status).toBe(201);
  const updated = await api(s.url, "PATCH", `/v2/destinations/${ok.json.id}`, { config });
  expect(updated.json.message).toBe(`config.${key}: ${reason}`);
  const tested = await testDestination(ok.json.id, config);
  expect(tested.status).toBe(400);
  expect(tested.json.message).toBe(`destinationConfig.${key}: ${reason}`);

  const dir = mkdtempSync(join(tmpdir(), "sluice-urls-"));
  try {
    const file = join(dir, "workspace.json");
    writeFileSync(file, JSON.stringify({ destinations: [{ name: "d", type, config }] }));
    await expect(readWorkspaceFile(file)).rejects.toThrow(`${file}: destinations[0].config.${key}: ${reason}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const NOT_WEB = ["file:///etc/passwd", "FILE:///etc/passwd", " file:///etc/passwd", "fi\tle:///etc/passwd", "ftp://files.example.com/x", "gopher://127.0.0.1:6379/_INFO", "data:text/plain,hi", "javascript:alert(1)", "localhost:8080/hook", "//example.com/hook"];
const MUST_BE_URL = "must be an http or https URL";

test("WEBHOOK: a file:// webhookUrl → 400 naming config.webhookUrl at save, update, Test API and workspace file; nothing is read or sent", async () => {
  await expectRefused("WEBHOOK", { webhookUrl: `${sink.url}/hook` }, { webhookUrl: "file:///etc/passwd" }, MUST_BE_URL);
  expect(sink.received).toHaveLength(0);
});

describe("every URL key of every kind refuses schemes other than http and https", () => {
  const URL_KEYS: Array<{ type: string; key: string; base: Record<string, unknown> }> = [
    { type: "WEBHOOK", key: "webhookUrl", base: { webhookUrl: "https://hooks.example.com/in" } },
    { type: "HTTP", key: "apiUrl", base: { apiUrl: "https://api.example.com/in" } },
    { type: "SLACK", key: "webhookUrl", base: { webhookUrl: "https://hooks.slack.com/services/T/B/X" } },
    { type: "POSTHOG", key: "yourInstance", base: { teamApiKey: "ph-key" } },
    { type: "GOOGLE_CLOUD_FUNCTION", key: "googleCloudFunctionUrl", base: { googleCloudFunctionUrl: "https://us-central1-p.cloudfunctions.net/fn" } },
  ];
  for (const { type, key, base } of URL_KEYS) {
    test(`${type}.${key}: ${NOT_WEB.length} other schemes → 400 naming the key; http and https are saved`, async () => {
      for (const url of NOT_WEB) await expectRefused(type, base, { [key]: url }, MUST_BE_URL);
      for (const url of ["http://127.0.0.1:9/in", "HTTPS://example.com/in"]) {
        const res = await api(s.url, "POST", "/v2/destinations", { name: name(), type, config: { ...base, [key]: url } });
        expect(`${url} → ${res.status}`).toBe(`${url} → 201`);
      }
    });
  }

  // Keys that become a URL's host: a bare host (with a port) or an http(s) URL; another scheme never.
  const HOST_KEYS: Array<{ type: string; key: string; base: Record<string, unknown>; accepted: string[] }> = [
    { type: "MAUTIC", key: "domainName", base: { userName: "a@example.com", password: "pw" }, accepted: ["mautic.example.com", "https://mautic.example.com", "mautic.local:8080"] },
    { type: "MAUTIC", key: "subDomainName", base: { userName: "a@example.com", password: "pw" }, accepted: ["acme", ""] },
    { type: "ZENDESK", key: "domain", base: { domain: "acme", email: "agent@example.com", apiToken: "t" }, accepted: ["acme"] },
    { type: "FRESHSALES", key: "domain", base: { apiKey: "k", domain: "acme" }, accepted: ["acme", "crm.example.com"] },
    { type: "CLEVERTAP", key: "region", base: { accountId: "a", passcode: "p" }, accepted: ["in1", "none"] },
  ];
  for (const { type, key, base, accepted } of HOST_KEYS) {
    test(`${type}.${key}: file:, ftp:, gopher: and data: → 400 naming the key; hosts are saved`, async () => {
      for (const url of ["file:///etc/passwd", "ftp://files.example.com", "gopher://127.0.0.1:6379/_INFO", "data:text/plain,hi"]) {
        await expectRefused(type, base, { [key]: url }, "must be a host name or an http or https URL");
      }
      for (const value of accepted) {
        const res = await api(s.url, "POST", "/v2/destinations", { name: name(), type, config: { ...base, [key]: value } });
        expect(`${value} → ${res.status}`).toBe(`${value} → 201`);
      }
    });
  }

  test("the URL and host keys checked are every config key a kind puts in a request URL", () => {
    const checked = Object.fromEntries(
      listDefinitions()
        .map((d) => [d.name, [...urlKeysOf(d), ...(d.config.hostKeys ?? [])].sort()] as const)
        .filter(([, keys]) => keys.length > 0),
    );
    expect(checked).toEqual({
      WEBHOOK: ["webhookUrl"],
      HTTP: ["apiUrl"],
      SLACK: ["webhookUrl"],
      POSTHOG: ["yourInstance"],
      MAUTIC: ["domainName", "subDomainName"],
      ZENDESK: ["domain"],
      FRESHSALES: ["domain"],
      CLEVERTAP: ["region"],
      ACTIVE_CAMPAIGN: ["apiUrl"],
      MINIO: ["endPoint"],
      DIGITAL_OCEAN_SPACES: ["endPoint"],
      GOOGLE_CLOUD_FUNCTION: ["googleCloudFunctionUrl"],
    });
  });
});
