/** Runs unsaved code over events in the sandbox, for POST /v2/transformations/test. */
import { AppError, badRequest } from "../lib/errors";
import { validateTransformationCode, type SandboxPool } from "./sandbox";

export async function testTransformation(sandbox: SandboxPool, input: { code: string; events: Record<string, unknown>[] }) {
  try {
    await validateTransformationCode(input.code);
  } catch (e) {
    throw badRequest(`code: ${(e as Error).message}`);
  }
  const versionId = `test-${new Bun.CryptoHasher("sha256").update(input.code).digest("hex").slice(0, 16)}`;
  const meta = (e: Record<string, unknown>) => ({
    sourceId: "",
    destinationId: "",
    destinationType: "",
    workspaceId: "",
    messageId: String(e.messageId ?? ""),
    transformationId: "",
    transformationVersionId: versionId,
  });
  const res = await sandbox.run({ versionId, code: input.code, events: input.events.map((event) => ({ event, metadata: meta(event) })) });
  // A full queue is not the code's fault: say so with 503, as for any overloaded service.
  if (res.retryable) throw new AppError("UNAVAILABLE", res.error ?? "the transformation sandbox is busy", undefined, { retryAfterSeconds: 1 });
  return { output: res.output.map((o) => o.event), logs: res.logs, errors: res.error ? [res.error] : [] };
}
