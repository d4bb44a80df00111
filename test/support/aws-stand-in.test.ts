import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { AwsClient } from "aws4fetch";
import { startAwsStandIn } from "./aws-stand-in";

const KEYS = { AKIDSTANDIN: "stand-in-secret", AKIDOTHER: "other-secret" };
const aws = startAwsStandIn({ keys: KEYS });
afterAll(() => aws.stop());
beforeEach(() => {
  aws.calls.length = 0;
  aws.refused.length = 0;
});

// retries: 0, so a refusal is seen as it is rather than retried by aws4fetch.
const client = (service: string, accessKeyId = "AKIDSTANDIN", secretAccessKey = KEYS.AKIDSTANDIN) =>
  new AwsClient({ accessKeyId, secretAccessKey, service, region: "us-east-1", retries: 0 });

const firehose = (body: unknown, c = client("firehose")) =>
  c.fetch(aws.url + "/", {
    method: "POST",
    headers: { "content-type": "application/x-amz-json-1.1", "x-amz-target": "Firehose_20150804.PutRecordBatch" },
    body: JSON.stringify(body),
  });

const batch = { DeliveryStreamName: "events", Records: [{ Data: "eyJhIjoxfQ==" }, { Data: "eyJhIjoyfQ==" }] };

describe("aws stand-in", () => {
  test("accepts a Firehose PutRecordBatch signed by aws4fetch and records it", async () => {
    const res = await firehose(batch);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-amz-json-1.1");
    const answer = (await res.json()) as any;
    expect(answer.FailedPutCount).toBe(0);
    expect(answer.RequestResponses).toHaveLength(2);
    for (const r of answer.RequestResponses) expect(typeof r.RecordId).toBe("string");
    expect(aws.refused).toEqual([]);
    expect(aws.calls).toHaveLength(1);
    const [call] = aws.calls;
    expect(call).toMatchObject({ service: "firehose", region: "us-east-1", accessKeyId: "AKIDSTANDIN", target: "Firehose_20150804.PutRecordBatch", method: "POST", path: "/" });
    expect(call.json).toEqual(batch);
  });

  test("EventBridge PutEvents gets one EventId per entry", async () => {
    const res = await client("events").fetch(aws.url + "/", {
      method: "POST",
      headers: { "content-type": "application/x-amz-json-1.1", "x-amz-target": "AWSEvents.PutEvents" },
      body: JSON.stringify({ Entries: [{ Detail: "{}" }, { Detail: "{}" }, { Detail: "{}" }] }),
    });
    const answer = (await res.json()) as any;
    expect(answer.FailedEntryCount).toBe(0);
    expect(answer.Entries.map((e: any) => e.EventId)).toHaveLength(3);
    expect(answer.Entries[0].EventId).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("an asynchronous Lambda invoke gets 202 and is recorded", async () => {
    const res = await client("lambda").fetch(aws.url + "/2015-03-31/functions/my-fn/invocations", {
      method: "POST",
      headers: { "x-amz-invocation-type": "Event" },
      body: '{"hello":"world"}',
    });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
    const [call] = aws.calls;
    expect(call).toMatchObject({ service: "lambda", path: "/2015-03-31/functions/my-fn/invocations", body: '{"hello":"world"}', json: { hello: "world" } });
    expect(call.headers["x-amz-invocation-type"]).toBe("Event");
  });

  test("refuses what AWS refuses, and records none of it as a call", async () => {
    // The body is swapped after signing, keeping every signed header.
    const signed = await client("firehose").sign(aws.url + "/", {
      method: "POST",
      headers: { "x-amz-target": "Firehose_20150804.PutRecordBatch" },
      body: JSON.stringify(batch),
    });
    const tampered = await fetch(signed.url, { method: "POST", headers: signed.headers, body: JSON.stringify({ ...batch, Records: [] }) });
    expect(tampered.status).toBe(403);
    expect(((await tampered.json()) as any).__type).toBe("InvalidSignatureException");

    const wrongSecret = await firehose(batch, client("firehose", "AKIDSTANDIN", "not-the-secret"));
    expect(wrongSecret.status).toBe(403);
    const ws = (await wrongSecret.json()) as any;
    expect(ws.__type).toBe("InvalidSignatureException");
    expect(ws.message).toStartWith("The request signature we calculated does not match the signature you provided.");

    const unknownKey = await firehose(batch, client("firehose", "AKIDNOBODY", "whatever"));
    expect(unknownKey.status).toBe(403);
    expect(await unknownKey.json()).toEqual({ __type: "UnrecognizedClientException", message: "The security token included in the request is invalid." });

    const unsigned = await fetch(aws.url + "/", { method: "POST", headers: { "x-amz-target": "Firehose_20150804.PutRecordBatch" }, body: "{}" });
    expect(unsigned.status).toBe(400);
    expect(await unsigned.json()).toEqual({ __type: "MissingAuthenticationTokenException", message: "Missing Authentication Token" });

    const stale = await fetch(
      await client("firehose").sign(aws.url + "/", { method: "POST", body: "{}", aws: { datetime: "20200101T000000Z" } }),
    );
    expect(stale.status).toBe(403);
    const st = (await stale.json()) as any;
    expect(st.__type).toBe("InvalidSignatureException");
    expect(st.message).toStartWith("Signature expired");

    const otherRegion = await new AwsClient({ accessKeyId: "AKIDSTANDIN", secretAccessKey: KEYS.AKIDSTANDIN, service: "firehose", region: "eu-west-1", retries: 0 }).fetch(aws.url + "/", { method: "POST", body: "{}" });
    expect(otherRegion.status).toBe(403);

    expect(aws.calls).toEqual([]);
    expect(aws.refused.map((r) => [r.status, r.reason.split(":")[0]])).toEqual([
      [403, "InvalidSignatureException"],
      [403, "InvalidSignatureException"],
      [403, "UnrecognizedClientException"],
      [400, "MissingAuthenticationTokenException"],
      [403, "InvalidSignatureException"],
      [403, "InvalidSignatureException"],
    ]);
  });

  test("a true x-amz-content-sha256 verifies, a false one is refused", async () => {
    const body = JSON.stringify(batch);
    const hash = new Bun.CryptoHasher("sha256").update(body).digest("hex");
    expect((await client("firehose").fetch(aws.url + "/", { method: "POST", headers: { "x-amz-content-sha256": hash }, body })).status).toBe(400); // verified; unknown operation
    expect((await client("firehose").fetch(aws.url + "/", { method: "POST", headers: { "x-amz-content-sha256": "0".repeat(64) }, body })).status).toBe(403);
  });

  test("scripted answers come first, in order, then handle, then the defaults", async () => {
    const seen: string[] = [];
    const scripted = startAwsStandIn({
      keys: KEYS,
      handle: (call) => (seen.push(call.target ?? ""), call.target === "Custom.Op" ? { status: 200, body: { handled: true } } : undefined),
    });
    try {
      scripted.script([
        { status: 500, body: { __type: "ServiceUnavailableException", message: "Slow down." } },
        { status: 200, body: { FailedPutCount: 1, RequestResponses: [{ ErrorCode: "InternalFailure" }] } },
      ]);
      const send = (target: string) =>
        client("firehose").fetch(scripted.url + "/", { method: "POST", headers: { "x-amz-target": target }, body: JSON.stringify(batch) });
      const first = await send("Firehose_20150804.PutRecordBatch");
      expect(first.status).toBe(500);
      expect(((await first.json()) as any).__type).toBe("ServiceUnavailableException");
      const second = await send("Firehose_20150804.PutRecordBatch");
      expect(((await second.json()) as any).FailedPutCount).toBe(1);
      const third = await send("Firehose_20150804.PutRecordBatch");
      expect(((await third.json()) as any).RequestResponses).toHaveLength(2);
      expect(await (await send("Custom.Op")).json()).toEqual({ handled: true });
      const unknown = await send("Nobody.Knows");
      expect(unknown.status).toBe(400);
      expect(await unknown.json()).toEqual({ __type: "UnknownOperationException" });
      expect(seen).toEqual(["Firehose_20150804.PutRecordBatch", "Custom.Op", "Nobody.Knows"]);
      expect(scripted.calls).toHaveLength(5);
    } finally {
      scripted.stop();
    }
  });

  test("paths needing encoding verify the way aws4fetch signs them", async () => {
    const arn = "arn:aws:lambda:us-east-1:123:function:f";
    // ":" as sent literally, percent-encoded as the AWS SDKs send it, and characters URL leaves alone.
    for (const name of [arn, encodeURIComponent(arn), "my fn(1)!*'", "caf%C3%A9", "a//b"]) {
      aws.calls.length = 0;
      const res = await client("lambda").fetch(`${aws.url}/2015-03-31/functions/${name}/invocations?Qualifier=v%201&a=b`, { method: "POST", body: "{}" });
      expect({ name, status: res.status, refused: aws.refused }).toEqual({ name, status: name === "a//b" ? 400 : 200, refused: [] });
      expect(aws.calls).toHaveLength(1);
    }
  });
});
