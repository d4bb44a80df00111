/**
 * Where each object-storage kind's files go: the endpoint, region, bucket and credentials read
 * from RudderStack's config keys, and the object key of a staged file in RudderStack's layout
 * (`<prefix>/rudder-logs/<sourceId>/<YYYY-MM-DD>/<unix seconds>.<sourceId>.<uuid>.json.gz`).
 */
import { S3Client } from "bun";

export const OBJECT_STORAGE_KINDS: ReadonlySet<string> = new Set(["S3", "MINIO", "DIGITAL_OCEAN_SPACES"]);

export function isObjectStorageKind(type: string): boolean {
  return OBJECT_STORAGE_KINDS.has(type);
}

/** rudder-server's folder for raw event files (its DESTINATION_BUCKET_FOLDER_NAME default). */
export const FOLDER = "rudder-logs";

export interface StoreTarget {
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId?: string;
  secretAccessKey?: string;
}

const text = (v: unknown) => (typeof v === "string" ? v.trim() : "");
const withScheme = (host: string, secure: boolean) => (/^https?:\/\//i.test(host) ? host : `${secure ? "https" : "http"}://${host}`);

/**
 * AWS answers a bucket's region in a header even to an unsigned request; us-east-1 when it does
 * not say. An answer is kept in `known` (a bucket does not move), so it is asked once.
 */
async function bucketRegion(bucket: string, timeoutMs: number, known: Map<string, string>): Promise<string> {
  const kept = known.get(bucket);
  if (kept) return kept;
  try {
    const res = await fetch(`https://${bucket}.s3.amazonaws.com/`, { method: "HEAD", signal: AbortSignal.timeout(timeoutMs) });
    const region = res.headers.get("x-amz-bucket-region");
    if (region) known.set(bucket, region);
    return region ?? "us-east-1";
  } catch {
    return "us-east-1";
  }
}

/**
 * The store of one destination (`knownRegions`: S3 buckets' regions already asked of AWS). `baseUrl` (`--destination-base-url KIND=URL`) replaces the
 * endpoint, as it replaces every kind's service URL (tests, proxies).
 */
export async function storeTarget(type: string, config: Record<string, any>, baseUrl: string | undefined, timeoutMs: number, knownRegions: Map<string, string>): Promise<StoreTarget> {
  const bucket = text(config.bucketName);
  if (type === "MINIO") {
    return { endpoint: baseUrl ?? withScheme(text(config.endPoint), config.useSSL === true), region: "us-east-1", bucket, accessKeyId: text(config.accessKeyID) || undefined, secretAccessKey: text(config.secretAccessKey) || undefined };
  }
  if (type === "DIGITAL_OCEAN_SPACES") {
    const endPoint = text(config.endPoint);
    // nyc3.digitaloceanspaces.com: the region is the first label.
    const region = new URL(withScheme(endPoint || "nyc3.digitaloceanspaces.com", true)).hostname.split(".")[0] || "us-east-1";
    return { endpoint: baseUrl ?? withScheme(endPoint, true), region, bucket, accessKeyId: text(config.accessKeyID) || undefined, secretAccessKey: text(config.accessKey) || undefined };
  }
  // S3: RudderStack's definition has no region key; like rudder-server, Sluice asks AWS (unless `region` is set).
  const region = text(config.region) || (baseUrl ? "us-east-1" : await bucketRegion(bucket, timeoutMs, knownRegions));
  return {
    endpoint: baseUrl ?? `https://s3.${region}.amazonaws.com`,
    region,
    bucket,
    // Without keys (RudderStack's role-based auth), Bun's client reads AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
    accessKeyId: text(config.accessKeyID) || undefined,
    secretAccessKey: text(config.accessKey) || undefined,
  };
}

export function clientOf(t: StoreTarget): S3Client {
  return new S3Client({ endpoint: t.endpoint, region: t.region, bucket: t.bucket, accessKeyId: t.accessKeyId, secretAccessKey: t.secretAccessKey });
}

/** A staged file's name: when it was opened, its source, and a unique id. */
export function fileNameOf(openedAtMs: number, sourceId: string): string {
  return `${Math.floor(openedAtMs / 1000)}.${sourceId}.${crypto.randomUUID()}.json.gz`;
}

/**
 * The object key of a staged file. The date is the day the file was opened (UTC), so a file
 * uploaded again after a crash lands on the same key and replaces itself.
 */
export function objectKeyOf(prefix: unknown, fileName: string): string | undefined {
  const m = /^(\d+)\.(.+)\.[0-9a-f-]{36}\.json\.gz$/.exec(fileName);
  if (!m) return undefined;
  const day = new Date(Number(m[1]) * 1000).toISOString().slice(0, 10);
  const folder = text(prefix).replace(/^\/+|\/+$/g, "");
  return [folder, FOLDER, m[2], day, fileName].filter(Boolean).join("/");
}
