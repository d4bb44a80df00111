/**
 * A stand-in for Amazon Kinesis Data Firehose, Amazon EventBridge and AWS Lambda in Sluice's tests.
 * It refuses any request whose AWS Signature Version 4 does not verify, answering with the errors
 * AWS answers, so a destination that signs wrongly fails here as it would against AWS. The check
 * is written from AWS's public SigV4 documentation ("Create a signed AWS API request") with
 * node:crypto, on purpose not with aws4fetch: a verifier sharing the signer's code would share its
 * mistakes too.
 */
import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";

export interface AwsCall {
  service: string;
  region: string;
  accessKeyId: string;
  target?: string;
  method: string;
  /** The path as it arrived, still percent-encoded, without the query string. */
  path: string;
  headers: Record<string, string>;
  body: string;
  json?: unknown;
  at: number;
}
export type AwsAnswer = { status: number; body: unknown };

const JSON_TYPE = "application/x-amz-json-1.1";
const SKEW_MS = 15 * 60_000;
const BAD_SIGNATURE =
  "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.";

class Refusal extends Error {
  constructor(readonly status: number, readonly type: string, message: string) {
    super(message);
  }
}

/** AWS's UriEncode: every byte but the RFC 3986 unreserved characters, as %XX in upper case. */
function uriEncode(s: string): string {
  let out = "";
  for (const b of Buffer.from(s, "utf8")) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-_.~]/.test(c) ? c : "%" + b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

function canonicalUri(rawPath: string, service: string): string {
  // S3 signs the path encoded once; every other service encodes the already-encoded path again,
  // after normalising it (Bun has already removed "." and ".." segments; runs of "/" remain).
  if (service === "s3") return rawPath.split("/").map((seg) => uriEncode(decodeURIComponent(seg))).join("/");
  return (rawPath.replace(/\/+/g, "/") || "/").split("/").map(uriEncode).join("/");
}

function canonicalQuery(rawQuery: string): string {
  return [...new URLSearchParams(rawQuery)]
    .filter(([k]) => k !== "")
    .map(([k, v]) => [uriEncode(k), uriEncode(v)])
    .sort(([k1, v1], [k2, v2]) => (k1 < k2 ? -1 : k1 > k2 ? 1 : v1 < v2 ? -1 : v1 > v2 ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join("&");
}

const hmac = (key: string | Buffer, data: string) => createHmac("sha256", key).update(data, "utf8").digest();
const sha256 = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

function amzDateMs(d: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(d);
  return m ? Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]) : NaN;
}

/** Checks the request's signature; answers who signed it, or throws the refusal AWS would give. */
function verify(req: Request, bytes: Uint8Array, keys: Record<string, string>, region: string) {
  const auth = req.headers.get("authorization");
  if (!auth) throw new Refusal(400, "MissingAuthenticationTokenException", "Missing Authentication Token");
  const m = /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request,\s*SignedHeaders=([a-z0-9\-;]+),\s*Signature=(\S+)$/.exec(auth.trim());
  if (!m) throw new Refusal(400, "IncompleteSignatureException", `Authorization header is not a valid AWS4-HMAC-SHA256 header: ${auth}`);
  const [, accessKeyId, scopeDate, scopeRegion, service, signedHeaders, signature] = m;
  const secret = keys[accessKeyId];
  if (secret === undefined) throw new Refusal(403, "UnrecognizedClientException", "The security token included in the request is invalid.");
  const amzDate = req.headers.get("x-amz-date") ?? "";
  const at = amzDateMs(amzDate);
  if (Number.isNaN(at)) throw new Refusal(400, "IncompleteSignatureException", "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.");
  const now = Date.now();
  const iso = (ms: number) => new Date(ms).toISOString().replace(/[:-]|\.\d{3}/g, "");
  if (at < now - SKEW_MS) throw new Refusal(403, "InvalidSignatureException", `Signature expired: ${amzDate} is now earlier than ${iso(now - SKEW_MS)} (${iso(now)} - 15 min.)`);
  if (at > now + SKEW_MS) throw new Refusal(403, "InvalidSignatureException", `Signature not yet current: ${amzDate} is still later than ${iso(now + SKEW_MS)} (${iso(now)} + 15 min.)`);
  if (scopeDate !== amzDate.slice(0, 8)) throw new Refusal(403, "InvalidSignatureException", `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${scopeDate}' != '${amzDate.slice(0, 8)}', from '${amzDate}'.`);
  if (scopeRegion !== region) throw new Refusal(403, "InvalidSignatureException", `Credential should be scoped to a valid region, not '${scopeRegion}'.`);
  const names = signedHeaders.split(";");
  if (!names.includes("host")) throw new Refusal(403, "InvalidSignatureException", "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.");

  // The hash is of the bytes that arrived: a client's claimed hash only counts when it is true.
  const bodyHash = sha256(bytes);
  const claimed = req.headers.get("x-amz-content-sha256");
  if (claimed !== null && claimed !== bodyHash) throw new Refusal(403, "InvalidSignatureException", `${BAD_SIGNATURE} (x-amz-content-sha256 ${claimed} is not the body's hash ${bodyHash})`);

  // req.url keeps the path's percent-encoding as sent, which the canonical URI is built from.
  const target = req.url.replace(/^[a-z]+:\/\/[^/]*/i, "");
  const q = target.indexOf("?");
  const canonicalRequest = [
    req.method.toUpperCase(),
    canonicalUri(q < 0 ? target : target.slice(0, q), service),
    canonicalQuery(q < 0 ? "" : target.slice(q + 1)),
    names.map((n) => `${n}:${(req.headers.get(n) ?? "").trim().replace(/ +/g, " ")}\n`).join(""),
    signedHeaders,
    bodyHash,
  ].join("\n");
  const scope = `${scopeDate}/${scopeRegion}/${service}/aws4_request`;
  const stringToSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonicalRequest)].join("\n");
  const signingKey = ["aws4_request"].reduce(hmac, [scopeDate, scopeRegion, service].reduce(hmac, Buffer.from("AWS4" + secret)));
  const expected = Buffer.from(createHmac("sha256", signingKey).update(stringToSign, "utf8").digest("hex"));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    // AWS shows what it signed, which is what makes a mismatch debuggable; so does the stand-in.
    const detail = `The Canonical String for this request should have been\n'${canonicalRequest}'\n\nThe String-to-Sign should have been\n'${stringToSign}'\n`;
    throw new Refusal(403, "InvalidSignatureException", `${BAD_SIGNATURE}\n\n${detail}`);
  }
  return { accessKeyId, service, region: scopeRegion };
}

function defaultAnswer(call: AwsCall): AwsAnswer {
  const json = (call.json ?? {}) as { Records?: unknown[]; Entries?: unknown[] };
  // Firehose record ids are long opaque strings; random bytes keep tests from relying on a shape.
  const recordId = () => randomBytes(42).toString("base64url");
  switch (call.target) {
    case "Firehose_20150804.PutRecordBatch":
      return { status: 200, body: { FailedPutCount: 0, Encrypted: false, RequestResponses: (json.Records ?? []).map(() => ({ RecordId: recordId() })) } };
    case "Firehose_20150804.PutRecord":
      return { status: 200, body: { RecordId: recordId(), Encrypted: false } };
    case "AWSEvents.PutEvents":
      return { status: 200, body: { FailedEntryCount: 0, Entries: (json.Entries ?? []).map(() => ({ EventId: randomUUID() })) } };
  }
  if (call.method === "POST" && /^\/2015-03-31\/functions\/[^/]+\/invocations$/.test(call.path)) {
    return call.headers["x-amz-invocation-type"] === "Event" ? { status: 202, body: undefined } : { status: 200, body: {} };
  }
  return { status: 400, body: { __type: "UnknownOperationException" } };
}

function respond(status: number, body: unknown, extra: Record<string, string> = {}): Response {
  const headers: Record<string, string> = { "x-amzn-requestid": randomUUID(), ...extra };
  if (body === undefined || body === null) return new Response(null, { status, headers });
  // A string is sent as it is, so a test can script a malformed answer.
  return new Response(typeof body === "string" ? body : JSON.stringify(body), { status, headers: { "content-type": JSON_TYPE, ...headers } });
}

export function startAwsStandIn(opts: {
  keys: Record<string, string>;
  region?: string;
  handle?: (call: AwsCall) => AwsAnswer | undefined;
}) {
  const region = opts.region ?? "us-east-1";
  const calls: AwsCall[] = [];
  const refused: Array<{ reason: string; status: number }> = [];
  const queue: AwsAnswer[] = [];
  let handle = opts.handle;

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const bytes = new Uint8Array(await req.arrayBuffer());
      let who: ReturnType<typeof verify>;
      try {
        who = verify(req, bytes, opts.keys, region);
      } catch (e) {
        if (!(e instanceof Refusal)) throw e;
        refused.push({ reason: `${e.type}: ${e.message}`, status: e.status });
        return respond(e.status, { __type: e.type, message: e.message }, { "x-amzn-errortype": e.type });
      }
      const body = new TextDecoder().decode(bytes);
      let json: unknown;
      try {
        json = body ? JSON.parse(body) : undefined;
      } catch {}
      const path = req.url.replace(/^[a-z]+:\/\/[^/]*/i, "").split("?")[0];
      const call: AwsCall = {
        ...who,
        target: req.headers.get("x-amz-target") ?? undefined,
        method: req.method,
        path,
        headers: Object.fromEntries(req.headers),
        body,
        json,
        at: Date.now(),
      };
      calls.push(call);
      const answer = queue.shift() ?? handle?.(call) ?? defaultAnswer(call);
      return respond(answer.status, answer.body);
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port as number,
    calls,
    refused,
    script(next: AwsAnswer[]) {
      queue.push(...next);
    },
    /** Replaces `handle` (undefined: the defaults), for a test that answers its own calls. */
    setHandler(next: ((call: AwsCall) => AwsAnswer | undefined) | undefined) {
      handle = next;
    },
    stop() {
      server.stop(true);
    },
  };
}
