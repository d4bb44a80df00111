/**
 * Calls the Test API (`/v0/testDestination`, `/v0/testSource`) with the session cookie. Unlike
 * `api()`, it keeps the body of a 400 that names a destination that was not tested
 * (`{destinationId, destinationName, error}`): that is a result to show, not only an error.
 */
import { answerError, send } from "../../api";

export interface Stages {
  user_transform: boolean;
  dest_transform: boolean;
  send_to_destination: boolean;
}

export const STAGE_KEYS: Array<keyof Stages> = ["user_transform", "dest_transform", "send_to_destination"];

export interface DestinationRequestView {
  method: string;
  endpoint: string;
  [key: string]: unknown;
}

/** One message after the user transformation; a field is present only when its stage ran. */
export interface TestEntry {
  user_transformed_payload?: Record<string, unknown>;
  dest_transformed_payload?: DestinationRequestView[] | { error: string };
  destination_response?: unknown[] | { error: string };
  destination_response_status?: number[];
}

export interface TestedDestination {
  destinationId: string;
  destination: string;
  destinationName: string;
  data: TestEntry[];
}

export interface UntestedDestination {
  destinationId: string;
  destinationName: string;
  error: string;
}

export type TestOutcome = TestedDestination | UntestedDestination;

export interface TestRequest {
  target: "destination" | "source";
  id: string;
  message: Record<string, unknown>;
  stages: Stages;
  force: boolean;
  destinationConfig?: Record<string, unknown>;
}

export async function runTest(req: TestRequest): Promise<TestOutcome[]> {
  const path = `/v0/${req.target === "destination" ? "testDestination" : "testSource"}/${encodeURIComponent(req.id)}${req.force ? "?force=true" : ""}`;
  const body: Record<string, unknown> = { message: req.message };
  // Every stage chosen is what an omitted `stage` means; sending it only when narrower keeps requests plain.
  if (!STAGE_KEYS.every((k) => req.stages[k])) body.stage = { ...req.stages };
  if (req.destinationConfig && req.target === "destination") body.destinationConfig = req.destinationConfig;
  const { res, data } = await send("POST", path, body);
  if (res.ok) return Array.isArray(data) ? data : [data];
  if (res.status === 400 && typeof data?.error === "string" && typeof data?.destinationId === "string") return [data as UntestedDestination];
  throw answerError(res.status, data);
}
