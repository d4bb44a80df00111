/**
 * What a workspace file will do on this Sluice, entry by entry, before it is applied: which
 * sources and destinations run, which are held and why, which config stops start-up. The same
 * answer for `sluice check-config FILE`, POST /v2/workspace-check and the dashboard's Import
 * check page. Pure: the caller reads the file and says which transformation code lies beside it.
 */
import { findDefinition } from "../destinations/registry";
import { badRequest } from "../lib/errors";
import { connectionModeOf, validateDestinationConfig } from "./destinations";
import type { WorkspaceCheck, WorkspaceCheckEntry } from "./schemas";
import { findSourceMapping } from "../sources/registry";
import { type FileDestination, type FileSource, type Workspace, WorkspaceFileError, isPulledSource, normalizeWorkspace, referenceProblem } from "./workspace-file";

export interface CheckOptions {
  /** Names the document in a refusal (the file's path, or "body"). */
  file: string;
  /** Version ids with a `transformations/<versionId>.js` beside the file. */
  transformationFiles?: ReadonlySet<string>;
}

/**
 * Throws WorkspaceFileError only for a document that cannot be read as a workspace (not an
 * object, a wrong shape, a RudderStack source without a name or write key); every other problem
 * is an entry of the answer.
 */
export function checkWorkspace(doc: unknown, opts: CheckOptions): WorkspaceCheck {
  const ws = normalizeWorkspace(doc, opts.file);
  const files = opts.transformationFiles ?? new Set<string>();
  const entries: WorkspaceCheckEntry[] = [
    ...ws.sources.map((s) => sourceEntry(ws, s)),
    ...ws.destinations.map((d, i) => destinationEntry(ws, d, i, files)),
    ...transformationEntries(ws, files),
  ];
  const counts = { runs: 0, device: 0, held: 0, error: 0 };
  for (const e of entries) counts[e.status]++;
  return { format: ws.format, entries, counts };
}

/** POST /v2/workspace-check: the body is the file; a document that is no workspace is a 400. */
export function checkWorkspaceBody(body: unknown): WorkspaceCheck {
  try {
    return checkWorkspace(body, { file: "body" });
  } catch (e) {
    if (e instanceof WorkspaceFileError) throw badRequest(e.message);
    throw e;
  }
}

function sourceEntry(ws: Workspace, s: FileSource): WorkspaceCheckEntry {
  const kind = s.sourceDefinition?.name || s.type || (ws.format === "sluice" ? "source" : "unknown");
  const entry = (status: WorkspaceCheckEntry["status"], reason: string): WorkspaceCheckEntry => ({ kind: "source", name: s.name, type: kind, status, reason });
  const category = s.sourceDefinition?.category?.toLowerCase() ?? (s.type ? "webhook" : "");
  if (isPulledSource(s)) {
    return entry("held", `a ${category} source: RudderStack's own services pull its data, Sluice pulls nothing. Imported as a source whose write key accepts event calls, marked unsupported.`);
  }
  if (category === "webhook") {
    const mapping = findSourceMapping(kind);
    if (!mapping) return entry("held", `a ${kind} webhook source: Sluice has no mapping for this type, so /v1/webhook refuses its posts (400) until it gets one; imported with its write key.`);
    return entry("runs", `a ${mapping.displayName} webhook source: posts to /v1/webhook?writeKey=… become its events, mapped as RudderStack maps them.`);
  }
  if (s.enabled === false) return entry("held", "disabled in the file: imported, its event calls are refused until it is enabled.");
  return entry("runs", "takes event calls (SDKs, HTTP API) with its write key.");
}

/** Where the code of a RudderStack transformation reference is, if anywhere Sluice can read it. */
function codeOf(ref: NonNullable<FileDestination["transformationRefs"]>[number], files: ReadonlySet<string>): string | undefined {
  if (ref.code) return "in the file";
  if (files.has(ref.versionId)) return `transformations/${ref.versionId}.js`;
  return undefined;
}

function destinationEntry(ws: Workspace, d: FileDestination, i: number, files: ReadonlySet<string>): WorkspaceCheckEntry {
  const entry = (status: WorkspaceCheckEntry["status"], reason: string): WorkspaceCheckEntry => ({ kind: "destination", name: d.name, type: d.type, status, reason });
  const def = findDefinition(d.type);
  const mode = connectionModeOf(d.config);
  const label = d.rudderDefinition?.displayName ?? def?.displayName ?? d.type;
  if (def) {
    try {
      validateDestinationConfig(d.type, d.config);
    } catch (e) {
      return entry("error", `${(e as Error).message} (sluice serve --config stops at this)`);
    }
  }
  if (mode === "device") {
    const off = d.enabled === false ? " Disabled in the file: not listed until it is enabled." : "";
    return entry("device", `device mode: the SDK loads ${label}'s own library and sends to it from the browser or app (Sluice lists it in /sourceConfig); the server delivers nothing.${off}`);
  }
  if (!def) {
    const sdk = mode === "hybrid" ? " The SDK still loads it (hybrid, listed in /sourceConfig)." : "";
    return entry("held", `unsupported kind '${d.type}' (${label}): kept with its config, receives nothing and queues nothing until a Sluice version has the kind.${sdk}`);
  }
  const reference = referenceProblem({ ...ws, destinations: [d], transformations: [] });
  if (reference) return entry("error", `${reference.replace(/^destinations\[0\]/, `destinations[${i}]`)} (sluice serve --config stops at this)`);
  if (d.enabled === false) return entry("held", "disabled in the file: imported, receives nothing until it is enabled.");
  const missing = (d.transformationRefs ?? []).filter((r) => !codeOf(r, files));
  if (missing.length) {
    const ids = missing.map((r) => r.versionId).join(", ");
    return entry("held", `its transformation (version ${ids}) has no code here: RudderStack keeps the code in its control plane. Add it as "code" to the file's transformation entry, as transformations/<versionId>.js beside the file, or with sluice import-transformations (a JSON export of RudderStack's Transformations API); until then its events queue and nothing is delivered to it (never untransformed).`);
  }
  const how = mode === "hybrid" ? "hybrid: the SDK loads it (listed in /sourceConfig) and the server delivers the events its definition's hybridModeCloudEventsFilter sends to the cloud" : "cloud mode: the server delivers to it";
  return entry("runs", `${how}.`);
}

/** Sluice's own transformations, and each RudderStack transformation version a destination names. */
function transformationEntries(ws: Workspace, files: ReadonlySet<string>): WorkspaceCheckEntry[] {
  const destNames = new Set(ws.destinations.map((d) => d.name));
  const out: WorkspaceCheckEntry[] = ws.transformations.map((tr, i) => {
    const base = { kind: "transformation" as const, name: tr.name, type: "transformation" };
    const j = (tr.destinations ?? []).findIndex((d) => !destNames.has(d));
    if (j >= 0) return { ...base, status: "error" as const, reason: `transformations[${i}].destinations[${j}]: no destination named '${tr.destinations![j]}' in this file (sluice serve --config stops at this)` };
    const to = tr.destinations?.length ? `runs before delivery to ${tr.destinations.join(", ")}` : "kept; runs for no destination";
    return { ...base, status: "runs" as const, reason: `${to} (its code is checked when the file is applied).` };
  });
  const byVersion = new Map<string, { ref: NonNullable<FileDestination["transformationRefs"]>[number]; destinations: string[] }>();
  for (const d of ws.destinations) {
    for (const ref of d.transformationRefs ?? []) {
      const seen = byVersion.get(ref.versionId);
      if (seen) {
        seen.destinations.push(d.name);
        if (!seen.ref.code && ref.code) seen.ref = ref;
      } else byVersion.set(ref.versionId, { ref, destinations: [d.name] });
    }
  }
  for (const [versionId, { ref, destinations }] of byVersion) {
    const where = codeOf(ref, files);
    const base = { kind: "transformation" as const, name: ref.id ?? versionId, type: versionId };
    out.push(
      where
        ? { ...base, status: "runs", reason: `code found (${where}); runs before delivery to ${destinations.join(", ")}.` }
        : {
            ...base,
            status: "held",
            reason: `no code here: RudderStack keeps it in its control plane. Add it as "code" to the transformation entry or as transformations/${versionId}.js beside the file. Held: ${destinations.join(", ")}. Or import RudderStack's export of it with sluice import-transformations.`,
          },
    );
  }
  return out;
}

const STATUS_WORDS: Record<WorkspaceCheckEntry["status"], string> = { runs: "runs", device: "device", held: "HELD", error: "ERROR" };

/** The check as `sluice check-config` prints it: one line per entry, then the counts. */
export function formatWorkspaceCheck(file: string, check: WorkspaceCheck): string {
  const shape = check.format === "rudderstack" ? "RudderStack's workspaceConfig.json" : "Sluice's workspace file";
  const rows = check.entries.map((e) => [e.kind, `${e.name} (${e.type})`, STATUS_WORDS[e.status], e.reason]);
  const width = (i: number) => Math.max(0, ...rows.map((r) => r[i]!.length));
  const [w0, w1, w2] = [width(0), width(1), width(2)];
  const lines = rows.map((r) => `${r[0]!.padEnd(w0)}  ${r[1]!.padEnd(w1)}  ${r[2]!.padEnd(w2)}  ${r[3]}`);
  const c = check.counts;
  const total = `${c.runs} run, ${c.device} device mode, ${c.held} held, ${c.error} ${c.error === 1 ? "error" : "errors"}${c.error ? " (sluice serve --config stops at an error)" : ""}`;
  return `${file}: ${shape}\n${lines.length ? lines.join("\n") + "\n" : "(no sources, destinations or transformations)\n"}${total}\n`;
}
