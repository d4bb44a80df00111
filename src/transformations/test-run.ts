/** Runs unsaved code over events in the sandbox, for POST /v2/transformations/test. */
import type { Scoped } from "../control-plane/context";
import type { TransformationsContext } from "./context";
import { AppError, badRequest } from "../lib/errors";
import { importsOf } from "../control-plane/libraries";
import { validateTransformationCode, type SandboxPool } from "./sandbox";
import type { TransformationTest } from "./schemas";

/**
 * The libraries the test runs with: those the request gives, and for every other import the
 * workspace's library of that name (its current version), as a save would pin it.
 */
async function librariesFor(ctx: Scoped<TransformationsContext>, input: TransformationTest): Promise<Record<string, string>> {
  const out: Record<string, string> = { ...input.libraries };
  const queue = [...importsOf(input.code), ...Object.values(out).flatMap(importsOf)];
  while (queue.length) {
    const name = queue.shift()!;
    if (name in out) continue;
    const lib = await ctx.controlPlane.libraryByImportName(ctx.workspaceId, name);
    // Left to the sandbox, whose error names the import.
    if (!lib) continue;
    const code = (await ctx.controlPlane.libraryVersionCode([lib.versionId])).get(lib.versionId);
    if (code === undefined) continue;
    out[name] = code;
    queue.push(...importsOf(code));
  }
  return out;
}

export async function testTransformation(ctx: Scoped<TransformationsContext>, sandbox: SandboxPool, input: TransformationTest) {
  const libraries = await librariesFor(ctx, input);
  try {
    await validateTransformationCode(input.code, {}, libraries);
  } catch (e) {
    throw badRequest(`code: ${(e as Error).message}`);
  }
  // The libraries are part of what runs: the same code with other library code is another version.
  const hash = new Bun.CryptoHasher("sha256").update(input.code);
  for (const name of Object.keys(libraries).sort()) hash.update(`\u0000${name}\u0000${libraries[name]}`);
  const versionId = `test-${hash.digest("hex").slice(0, 16)}`;
  const meta = (e: Record<string, unknown>) => ({
    sourceId: "",
    destinationId: "",
    destinationType: "",
    workspaceId: "",
    messageId: String(e.messageId ?? ""),
    transformationId: "",
    transformationVersionId: versionId,
  });
  const res = await sandbox.run({ versionId, code: input.code, libraries, events: input.events.map((event) => ({ event, metadata: meta(event) })) });
  // A full queue is not the code's fault: say so with 503, as for any overloaded service.
  if (res.retryable) throw new AppError("UNAVAILABLE", res.error ?? "the transformation sandbox is busy", undefined, { retryAfterSeconds: 1 });
  return { output: res.output.map((o) => o.event), logs: res.logs, errors: res.error ? [res.error] : [] };
}
