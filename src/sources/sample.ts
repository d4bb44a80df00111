/**
 * A dry run of a webhook source's mapping: a payload (the type's documented sample, or one the
 * caller gives) mapped as /v1/webhook would map it, with nothing stored, delivered or remembered.
 * The dashboard's "try a sample" shows it before the service is wired.
 */
import { AppError } from "../lib/errors";
import { canonicalHeaderName } from "./common";
import { memoryState } from "./state-store";
import type { AnswerToSource, SamplePayload, SourceMapping, WebhookRequest, WebhookSourceInfo } from "./types";

export interface SampleRun {
  request: WebhookRequest;
  events: Record<string, unknown>[];
  answer?: AnswerToSource;
  /** What /v1/webhook would answer instead of `ok`, when the mapping refuses the payload. */
  error?: { status: number; message: string };
}

export async function mapSample(mapping: SourceMapping, source: WebhookSourceInfo, payload: SamplePayload = mapping.sample): Promise<SampleRun> {
  const query: Record<string, string[]> = { writeKey: [source.writeKey] };
  for (const [k, v] of Object.entries(payload.query ?? {})) query[k] = [v];
  const headers: Record<string, string[]> = { "Content-Type": ["application/json"] };
  for (const [k, v] of Object.entries(payload.headers ?? {})) headers[canonicalHeaderName(k)] = [v];
  const body = JSON.stringify(payload.body === undefined ? {} : payload.body);
  const request: WebhookRequest = {
    method: "POST",
    url: `/v1/webhook?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, v[0]!]))}`,
    proto: "HTTP/1.1",
    headers,
    query_parameters: query,
    body,
    json: JSON.parse(body),
  };
  try {
    // No `http`: a sample calls no service (Facebook Lead Ads' events stay without the lead's
    // answers, whatever token the source has), and no `warn`: nothing of it is logged.
    const result = await mapping.map(request, { source, state: memoryState(), uuid: () => crypto.randomUUID(), now: Date.now });
    return { request, events: result.events, ...(result.answer ? { answer: result.answer } : {}) };
  } catch (err) {
    if (err instanceof AppError) return { request, events: [], error: { status: err.status, message: err.message } };
    return { request, events: [], error: { status: 400, message: `the ${mapping.displayName} mapping could not read this request` } };
  }
}
