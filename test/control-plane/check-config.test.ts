/**
 * `sluice check-config FILE`, run as a real process: for every source, destination and
 * transformation of a workspace file (RudderStack's or Sluice's), what will run, what is held
 * and why; exit 0 whatever it finds, non-zero only for a file that is no workspace.
 */
import { afterAll, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanup, tempDir } from "../support/helpers";

const ROOT = join(import.meta.dir, "../..");
const FIXTURE = join(import.meta.dir, "../fixtures", "rudderstack", "import.json");
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map(cleanup)));

function checkConfig(...args: string[]) {
  const r = Bun.spawnSync([process.execPath, "src/main.ts", "check-config", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

/** The printed line of one entry, by its name (and kind in brackets). */
const lineOf = (out: string, name: string) => out.split("\n").find((l) => l.includes(` ${name} (`)) ?? `(no line for ${name})`;

test("RudderStack's workspaceConfig.json: each entry says whether it runs, is held and why; exit 0", () => {
  const { code, out } = checkConfig(FIXTURE);
  expect(code).toBe(0);
  expect(out).toStartWith(`${FIXTURE}: RudderStack's workspaceConfig.json\n`);
  expect(lineOf(out, "Raw events archive")).toMatch(/^destination +Raw events archive \(GCS\) +HELD +unsupported kind 'GCS' \(Google Cloud Storage\): kept with its config, receives nothing/);
  expect(lineOf(out, "Analytics warehouse")).toMatch(/HELD +unsupported kind 'BQ' \(BigQuery\)/);
  expect(lineOf(out, "Product analytics (browser)")).toMatch(/device +device mode: the SDK loads Amplitude's own library/);
  expect(lineOf(out, "Engagement")).toMatch(/runs +hybrid: the SDK loads it/);
  expect(lineOf(out, "Order hook")).toMatch(/runs +cloud mode: the server delivers to it\./);
  expect(lineOf(out, "Enriched hook")).toMatch(/HELD +its transformation \(version trv-enrich-0003\) has no code here: RudderStack keeps the code in its control plane/);
  expect(lineOf(out, "trf-enrich-0001")).toMatch(/^transformation .*HELD +no code here.*transformations\/trv-enrich-0003\.js beside the file\. Held: Enriched hook\./);
  expect(lineOf(out, "CRM sync")).toMatch(/^source +CRM sync \(salesforce\) +HELD +a cloud source: RudderStack's own services pull its data, Sluice pulls nothing/);
  expect(lineOf(out, "Shop website")).toMatch(/^source +Shop website \(Javascript\) +runs/);
  expect(out).toEndWith("4 run, 1 device mode, 5 held, 0 errors\n");
});

test("a transformations/<versionId>.js beside the file supplies RudderStack's missing code", () => {
  const dir = tempDir();
  dirs.push(dir);
  const file = join(dir, "workspaceConfig.json");
  copyFileSync(FIXTURE, file);
  mkdirSync(join(dir, "transformations"));
  writeFileSync(join(dir, "transformations", "trv-enrich-0003.js"), "export function transformEvent(event) { return event; }\n");
  const { code, out } = checkConfig(file);
  expect(code).toBe(0);
  expect(lineOf(out, "Enriched hook")).toMatch(/runs +cloud mode/);
  expect(lineOf(out, "trf-enrich-0001")).toMatch(/runs +code found \(transformations\/trv-enrich-0003\.js\); runs before delivery to Enriched hook\./);
});

test("Sluice's own file: a config error names the key and says start-up stops there; still exit 0", () => {
  const dir = tempDir();
  dirs.push(dir);
  const file = join(dir, "workspace.yaml");
  writeFileSync(
    file,
    [
      "sources: [ { name: web } ]",
      "destinations:",
      "  - { name: hook, type: WEBHOOK, config: { webhookMethod: POST }, sources: [web] }",
      "  - { name: ok-hook, type: WEBHOOK, config: { webhookUrl: 'http://127.0.0.1:9/x' }, sources: [web] }",
      "  - { name: lake, type: GCS, config: { bucketName: b }, sources: [web] }",
      "transformations:",
      "  - { name: tag, code: 'export function transformEvent(e) { return e; }', destinations: [ok-hook] }",
    ].join("\n"),
  );
  const { code, out } = checkConfig(file);
  expect(code).toBe(0);
  expect(out).toStartWith(`${file}: Sluice's workspace file\n`);
  expect(lineOf(out, "hook")).toMatch(/^destination +hook \(WEBHOOK\) +ERROR +config\.webhookUrl: is required \(sluice serve --config stops at this\)/);
  expect(lineOf(out, "ok-hook")).toMatch(/runs +cloud mode/);
  expect(lineOf(out, "lake")).toMatch(/HELD +unsupported kind 'GCS'/);
  expect(lineOf(out, "tag")).toMatch(/runs +runs before delivery to ok-hook/);
  expect(out).toEndWith("3 run, 0 device mode, 1 held, 1 error (sluice serve --config stops at an error)\n");
});

test("a file that cannot be read as a workspace: exit 1 with one line naming it; no FILE: usage, exit 2", () => {
  const dir = tempDir();
  dirs.push(dir);
  const missing = checkConfig(join(dir, "nope.json"));
  expect(missing.code).toBe(1);
  expect(missing.err).toBe(`sluice: ${join(dir, "nope.json")}: cannot be read (ENOENT)\n`);
  const notJson = join(dir, "broken.json");
  writeFileSync(notJson, "{ sources: ");
  expect(checkConfig(notJson)).toMatchObject({ code: 1, out: "" });
  expect(checkConfig(notJson).err).toStartWith(`sluice: ${notJson}: not valid JSON`);
  const notWorkspace = join(dir, "list.json");
  writeFileSync(notWorkspace, "[1, 2]");
  expect(checkConfig(notWorkspace)).toMatchObject({ code: 1, err: `sluice: ${notWorkspace}: expected an object with sources, destinations and transformations\n` });
  const noName = join(dir, "rs.json");
  writeFileSync(noName, JSON.stringify({ sources: [{ writeKey: "k-123456789", sourceDefinition: { name: "Javascript" }, destinations: [] }] }));
  expect(checkConfig(noName)).toMatchObject({ code: 1, err: `sluice: ${noName}: sources[0].name: is required\n` });
  expect(checkConfig()).toMatchObject({ code: 2, err: "sluice: usage: sluice check-config FILE\n" });
});

test("RudderStack's streaming, queue, spreadsheet, stream-insert and function destinations show as runs, with the configs RudderStack's dashboard saves", () => {
  const dir = tempDir();
  dirs.push(dir);
  const ws = JSON.parse(readFileSync(FIXTURE, "utf8"));
  const serviceAccount = JSON.stringify({ type: "service_account", client_email: "sa@p.iam.gserviceaccount.com", private_key: "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n", token_uri: "https://oauth2.googleapis.com/token" });
  const kinds: Array<[string, string, Record<string, unknown>]> = [
    ["KAFKA", "Apache Kafka", { hostName: "kafka-1.internal,kafka-2.internal", port: "9092", topic: "events", sslEnabled: true, useSASL: true, saslType: "sha512", username: "u", password: "p", enableMultiTopic: false, convertToAvro: false, useSSH: false }],
    ["CONFLUENT_CLOUD", "Confluent Cloud", { topic: "events", bootstrapServer: "pkc-1.eu-west-1.aws.confluent.cloud:9092", apiKey: "K", apiSecret: "S" }],
    ["AZURE_EVENT_HUB", "Azure Event Hub", { topic: "hub", bootstrapServer: "ns.servicebus.windows.net:9093", eventHubsConnectionString: "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v" }],
    ["KINESIS", "Amazon Kinesis", { region: "us-east-1", stream: "events", accessKeyID: "AK", accessKey: "S", useMessageId: false, roleBasedAuth: false }],
    ["FIREHOSE", "Amazon Kinesis Firehose", { region: "us-east-1", accessKeyID: "AK", accessKey: "S", mapEvents: [{ from: "*", to: "stream" }] }],
    ["EVENTBRIDGE", "AWS EventBridge", { region: "us-east-1", accessKeyID: "AK", accessKey: "S", detailType: "rudder", eventBusName: "", resourceID: [] }],
    ["LAMBDA", "AWS Lambda", { region: "us-east-1", accessKeyId: "AK", accessKey: "S", lambda: "fn", enableBatchInput: false, maxBatchSize: "10" }],
    ["GOOGLEPUBSUB", "Google Cloud Pub/Sub", { projectId: "p", credentials: serviceAccount, eventToTopicMap: [{ from: "*", to: "events" }], eventToAttributesMap: [] }],
    ["GOOGLE_CLOUD_FUNCTION", "Google Cloud Function", { googleCloudFunctionUrl: "https://us-central1-p.cloudfunctions.net/fn", requireAuthentication: true, credentials: serviceAccount, enableBatchInput: false }],
    ["GOOGLESHEETS", "Google Sheets", { credentials: serviceAccount, sheetId: "1abc", sheetName: "Sheet1", eventKeyMap: [{ from: "email", to: "Email" }] }],
    ["BQSTREAM", "BigQuery Stream", { credentials: serviceAccount, projectId: "p", datasetId: "events", tableId: "tracks", insertId: "id" }],
  ];
  ws.sources[0].destinations.push(
    ...kinds.map(([name, displayName, config], i) => ({
      id: `dst-stream-${i}`,
      name: `Stream ${name}`,
      enabled: true,
      isProcessorEnabled: true,
      config,
      transformations: [],
      destinationDefinition: { id: `def-${name.toLowerCase()}`, name, displayName, config: { transformAtV1: "processor" } },
    })),
  );
  const file = join(dir, "workspaceConfig.json");
  writeFileSync(file, JSON.stringify(ws));
  const { code, out } = checkConfig(file);
  expect(code).toBe(0);
  for (const [name] of kinds) expect(lineOf(out, `Stream ${name}`)).toMatch(/ runs +cloud mode: the server delivers to it\./);
});
