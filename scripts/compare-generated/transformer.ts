/**
 * A running rudder-transformer, asked as rudder-server's processor asks it:
 * `POST /v0/destinations/<name in lower case>` with a JSON array of
 * `{message, metadata, destination}`; the answer is an array of `{output, statusCode, error,
 * metadata, statTags}`, one entry per request an event became (several for one event, in order)
 * or one per event that failed. One event is sent per call, so the answer is that event's alone.
 */
import type { AnyDestinationDefinition } from "../../src/destinations/types";

/** The destination object rudder-server sends: the published case's, with what a real one always has. */
export function destinationOf(def: AnyDestinationDefinition, published: any): Record<string, any> {
  return {
    ID: "2fGenCmp0destination0000001",
    Name: `${def.name.toLowerCase()} generated-events comparison`,
    Enabled: true,
    WorkspaceID: "2fGenCmp0workspace00000001",
    Transformations: [],
    IsProcessorEnabled: true,
    RevisionID: "2fGenCmp0revision000000001",
    ...published,
    Config: published?.Config ?? {},
    DestinationDefinition: {
      ID: "2fGenCmp0definition0000001",
      Config: {},
      ...(published?.DestinationDefinition ?? {}),
      Name: def.name,
      DisplayName: published?.DestinationDefinition?.DisplayName ?? def.displayName,
    },
  };
}

/** rudder-server's processor metadata for one event (the fields a transform may read). */
export function metadataOf(message: Record<string, any>, destination: Record<string, any>, jobId: number): Record<string, any> {
  return {
    sourceId: "2fGenCmp0source00000000001",
    sourceName: "generated",
    workspaceId: destination.WorkspaceID,
    namespace: "",
    instanceId: "1",
    sourceType: "Javascript",
    sourceCategory: "",
    trackingPlanId: "",
    trackingPlanVersion: 0,
    destinationId: destination.ID,
    destinationName: destination.Name,
    jobId,
    sourceJobId: "",
    sourceJobRunId: "",
    sourceTaskRunId: "",
    recordId: null,
    destinationType: destination.DestinationDefinition.Name,
    messageId: message.messageId,
    messageIds: null,
    rudderId: message.rudderId,
    receivedAt: message.receivedAt,
    eventName: message.event ?? "",
    eventType: message.type,
    sourceDefinitionId: "2fGenCmp0sourceDefinition1",
    destinationDefinitionId: destination.DestinationDefinition.ID,
    transformationId: "",
    dontBatch: false,
  };
}

export class Transformer {
  constructor(readonly url: string) {}

  /** The transformer's /health answer, or why it gave none. */
  async health(): Promise<{ ok: boolean; text: string }> {
    try {
      const res = await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(5000) });
      return { ok: res.ok, text: (await res.text()).slice(0, 200) };
    } catch (e) {
      return { ok: false, text: String((e as Error)?.message ?? e) };
    }
  }

  /** The transformer's answer for one event; throws when it gives no array (unknown destination, crash). */
  async process(def: AnyDestinationDefinition, input: { message: any; metadata: any; destination: any }): Promise<any[]> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const res = await fetch(`${this.url}/v0/destinations/${def.name.toLowerCase()}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify([input]),
          signal: AbortSignal.timeout(60_000),
        });
        const text = await res.text();
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          throw new Error(`HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`);
        }
        if (!Array.isArray(body)) throw new Error(`HTTP ${res.status}: ${text.slice(0, 300)}`);
        return body;
      } catch (e) {
        lastError = e;
        // A refused or reset connection is tried again; an answer that is not an array is not.
        if (/^HTTP /.test(String((e as Error)?.message))) throw e;
        await Bun.sleep(500 * (attempt + 1));
      }
    }
    throw lastError;
  }
}

/** Runs `work` over the items with at most `n` at a time, results in the items' order. */
export async function pool<T, R>(items: T[], n: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return results;
}
