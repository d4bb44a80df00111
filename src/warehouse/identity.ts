/**
 * Identity resolution for the PostgreSQL warehouse: merge rules from events, and the
 * mappings that give every identifier of a connected group one `rudder_id`.
 *
 * RudderStack builds the same two tables (rudder-server `warehouse/identity`), one rule at a
 * time. Here a batch of rules is resolved as a graph in a few statements, so the cost of a load
 * does not grow with round trips per rule; the outcome is the same groups and the same rule for
 * which rudder_id survives a join (the smallest).
 */
import type { SQL } from "bun";
import { AppError } from "../lib/errors.ts";
import type { WarehouseType } from "./types.ts";

/**
 * The destination config key that turns identity resolution on. RudderStack has no per-destination
 * key: its switch is the server-wide `Warehouse.enableIDResolution` (env
 * RSERVER_WAREHOUSE_ENABLE_ID_RESOLUTION), honoured only for Snowflake and BigQuery. Sluice offers
 * it per destination under the same name, so a RudderStack config that carries it reads alike.
 */
export const IDENTITY_RESOLUTION_CONFIG_KEY = "enableIDResolution";

export const MERGE_RULES_TABLE = "rudder_identity_merge_rules";
export const MAPPINGS_TABLE = "rudder_identity_mappings";

/** RudderStack's columns of the merge-rules table, as staged rows would carry them. */
export const MERGE_RULE_COLUMNS: Readonly<Record<keyof MergeRule, WarehouseType>> = {
  merge_property_1_type: "string",
  merge_property_1_value: "string",
  merge_property_2_type: "string",
  merge_property_2_value: "string",
};

/**
 * Two identifiers that belong to one person, or a single identifier (property 2 null) that
 * starts a group of its own, in RudderStack's column names.
 */
export interface MergeRule {
  merge_property_1_type: string;
  merge_property_1_value: string;
  merge_property_2_type: string | null;
  merge_property_2_value: string | null;
}

/** What one applyMergeRules call changed. */
export interface MergeResult {
  /** Rules not seen before, now in the merge-rules table. */
  rules: number;
  /** Mapping rows inserted or moved to another rudder_id. */
  mappings: number;
}

/** True when the destination's config turns identity resolution on. */
export function isIdentityResolutionEnabled(config: Record<string, unknown> | undefined): boolean {
  const v = config?.[IDENTITY_RESOLUTION_CONFIG_KEY];
  // RudderStack's configs sometimes carry booleans as strings.
  return v === true || v === "true";
}

/**
 * The merge rule an event gives, as RudderStack's warehouse transformer derives it:
 * - merge: its two `mergeProperties` `{type, value}` (anything but exactly two complete ones
 *   gives nothing; RudderStack rejects such an event);
 * - alias: `user_id` userId ↔ `user_id` previousId;
 * - every other call: `anonymous_id` ↔ `user_id` when it has both, or the one it has alone
 *   (RudderStack does this for identify, track, page, screen and group alike).
 * Values become strings; blank ones count as missing.
 */
export function mergeRulesOf(event: Record<string, unknown>): MergeRule[] {
  const type = typeof event.type === "string" ? event.type.toLowerCase() : "";
  let first: Identifier | null;
  let second: Identifier | null;
  if (type === "merge") {
    const props = event.mergeProperties;
    if (!Array.isArray(props) || props.length !== 2) return [];
    first = identifierOf(props[0]);
    second = identifierOf(props[1]);
    if (!first || !second) return [];
  } else if (type === "alias") {
    first = identifier("user_id", event.userId);
    second = identifier("user_id", event.previousId);
  } else {
    const anonymous = identifier("anonymous_id", event.anonymousId);
    const user = identifier("user_id", event.userId);
    first = anonymous ?? user;
    second = anonymous ? user : null;
  }
  if (!first) return [];
  return [
    {
      merge_property_1_type: first.type,
      merge_property_1_value: first.value,
      merge_property_2_type: second?.type ?? null,
      merge_property_2_value: second?.value ?? null,
    },
  ];
}

/**
 * Adds the rules to the namespace's merge-rules table and updates its mappings so that every
 * identifier of a connected group has one rudder_id: a group of new identifiers gets a new one,
 * a rule that touches one group extends it, and a rule that connects groups joins them under
 * the smallest of their rudder_ids (RudderStack keeps the first of the sorted distinct ids).
 *
 * Runs inside the caller's transaction (the load's), creating the tables if missing. Rules
 * already in the table are skipped, so applying the same rules again changes nothing.
 */
export async function applyMergeRules(tx: SQL, namespace: string, rules: MergeRule[], now: Date): Promise<MergeResult> {
  checkNamespace(namespace);
  const fresh = distinctRules(rules);
  if (fresh.length === 0) return { rules: 0, mappings: 0 };
  const rulesTable = qualified(namespace, MERGE_RULES_TABLE);
  const mappingsTable = qualified(namespace, MAPPINGS_TABLE);

  // The same lock the loader takes (advisory locks nest within a session): the rule check and
  // the read-then-write of mappings below must not interleave with another load of the namespace.
  await tx.unsafe(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`sluice-warehouse:${namespace}`]);
  await ensureTables(tx, namespace);

  // Only rules never seen before change anything; RudderStack applies only those too.
  const added: MergeRule[] = await tx.unsafe(
    `INSERT INTO ${rulesTable} (merge_property_1_type, merge_property_1_value, merge_property_2_type, merge_property_2_value, created_at)
     SELECT r.t1, r.v1, r.t2, r.v2, $2::timestamptz
     FROM jsonb_to_recordset($1::text::jsonb) AS r(n int, t1 text, v1 text, t2 text, v2 text)
     WHERE NOT EXISTS (SELECT 1 FROM ${rulesTable} e
       WHERE e.merge_property_1_type = r.t1 AND e.merge_property_1_value = r.v1
         AND e.merge_property_2_type IS NOT DISTINCT FROM r.t2 AND e.merge_property_2_value IS NOT DISTINCT FROM r.v2)
     ORDER BY r.n
     RETURNING merge_property_1_type, merge_property_1_value, merge_property_2_type, merge_property_2_value`,
    [JSON.stringify(fresh.map((r, n) => ({ n, t1: r.merge_property_1_type, v1: r.merge_property_1_value, t2: r.merge_property_2_type, v2: r.merge_property_2_value }))), now.toISOString()],
  );
  if (added.length === 0) return { rules: 0, mappings: 0 };

  // The identifiers the new rules name, and the rudder_ids some of them already have.
  const groups = new Groups();
  for (const r of added) {
    const a = groups.add(keyOf(r.merge_property_1_type, r.merge_property_1_value));
    if (r.merge_property_2_type !== null && r.merge_property_2_value !== null) {
      groups.union(a, groups.add(keyOf(r.merge_property_2_type, r.merge_property_2_value)));
    }
  }
  const known: Array<{ t: string; v: string; rudder_id: string }> = await tx.unsafe(
    `SELECT m.merge_property_type AS t, m.merge_property_value AS v, m.rudder_id
     FROM ${mappingsTable} m
     JOIN jsonb_to_recordset($1::text::jsonb) AS k(t text, v text) ON m.merge_property_type = k.t AND m.merge_property_value = k.v`,
    [JSON.stringify(groups.keys().map(splitKey))],
  );
  // Identifiers that already share a rudder_id are one group: link them through that id.
  const current = new Map<string, string>();
  for (const m of known) {
    const key = keyOf(m.t, m.v);
    current.set(key, m.rudder_id);
    groups.union(groups.index(key)!, groups.add(`\u0001${m.rudder_id}`));
  }

  // Per group: the surviving rudder_id, the ids it absorbs, the identifiers still unmapped.
  const survivorOf = new Map<number, string>();
  for (const id of new Set(current.values())) {
    const root = groups.find(groups.index(`\u0001${id}`)!);
    const seen = survivorOf.get(root);
    if (seen === undefined || id < seen) survivorOf.set(root, id);
  }
  const moves: Array<{ from: string; to: string }> = [];
  for (const id of new Set(current.values())) {
    const to = survivorOf.get(groups.find(groups.index(`\u0001${id}`)!))!;
    if (id !== to) moves.push({ from: id, to });
  }
  const inserts: Array<{ t: string; v: string; r: string }> = [];
  for (const key of groups.keys()) {
    if (key.startsWith("\u0001") || current.has(key)) continue;
    const root = groups.find(groups.index(key)!);
    let rudderId = survivorOf.get(root);
    if (rudderId === undefined) survivorOf.set(root, (rudderId = crypto.randomUUID()));
    inserts.push({ ...splitKey(key), r: rudderId });
  }

  let mappings = 0;
  if (moves.length > 0) {
    const r = await tx.unsafe(
      `UPDATE ${mappingsTable} m SET rudder_id = j.to_id, updated_at = $2::timestamptz
       FROM jsonb_to_recordset($1::text::jsonb) AS j(from_id text, to_id text)
       WHERE m.rudder_id = j.from_id`,
      [JSON.stringify(moves.map((m) => ({ from_id: m.from, to_id: m.to }))), now.toISOString()],
    );
    mappings += r.count ?? 0;
  }
  if (inserts.length > 0) {
    const r = await tx.unsafe(
      `INSERT INTO ${mappingsTable} (merge_property_type, merge_property_value, rudder_id, updated_at)
       SELECT j.t, j.v, j.r, $2::timestamptz FROM jsonb_to_recordset($1::text::jsonb) AS j(t text, v text, r text)
       ON CONFLICT (merge_property_type, merge_property_value) DO NOTHING`,
      [JSON.stringify(inserts), now.toISOString()],
    );
    mappings += r.count ?? 0;
  }
  return { rules: added.length, mappings };
}

/**
 * RudderStack's columns, and created_at from its own copy of the rules table. `id` keeps the
 * order rules arrived in; the mappings key is what every lookup and upsert goes through, and the
 * rudder_id index serves the join of two groups.
 */
async function ensureTables(tx: SQL, namespace: string): Promise<void> {
  await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS ${ident(namespace)}`);
  await tx.unsafe(
    `CREATE TABLE IF NOT EXISTS ${qualified(namespace, MERGE_RULES_TABLE)} (
       id bigserial PRIMARY KEY,
       merge_property_1_type text NOT NULL,
       merge_property_1_value text NOT NULL,
       merge_property_2_type text,
       merge_property_2_value text,
       created_at timestamp with time zone NOT NULL DEFAULT now())`,
  );
  await tx.unsafe(
    `CREATE INDEX IF NOT EXISTS ${ident(`${MERGE_RULES_TABLE}_properties`)} ON ${qualified(namespace, MERGE_RULES_TABLE)}
       (merge_property_1_type, merge_property_1_value, merge_property_2_type, merge_property_2_value)`,
  );
  await tx.unsafe(
    `CREATE TABLE IF NOT EXISTS ${qualified(namespace, MAPPINGS_TABLE)} (
       merge_property_type text NOT NULL,
       merge_property_value text NOT NULL,
       rudder_id text NOT NULL,
       updated_at timestamp with time zone NOT NULL DEFAULT now(),
       PRIMARY KEY (merge_property_type, merge_property_value))`,
  );
  await tx.unsafe(`CREATE INDEX IF NOT EXISTS ${ident(`${MAPPINGS_TABLE}_rudder_id`)} ON ${qualified(namespace, MAPPINGS_TABLE)} (rudder_id)`);
}

interface Identifier {
  type: string;
  value: string;
}

function identifier(type: string, value: unknown): Identifier | null {
  const v = textOf(value);
  return v === null ? null : { type, value: v };
}

function identifierOf(prop: unknown): Identifier | null {
  if (typeof prop !== "object" || prop === null) return null;
  const { type, value } = prop as { type?: unknown; value?: unknown };
  const t = textOf(type);
  const v = textOf(value);
  return t === null || v === null ? null : { type: t, value: v };
}

function textOf(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const raw = typeof value === "string" ? value : typeof value === "object" ? JSON.stringify(value) : String(value);
  const s = noNul(raw);
  return s.trim() === "" ? null : s;
}

// PostgreSQL text cannot hold NUL.
function noNul(s: string): string {
  return s.includes("\0") ? s.replaceAll("\0", "") : s;
}

/**
 * Drops repeats within the batch (most events repeat the same pair), keeping the first, and NUL
 * from rules made elsewhere than mergeRulesOf (staged files, a RudderStack export).
 */
function distinctRules(rules: MergeRule[]): MergeRule[] {
  const seen = new Set<string>();
  const out: MergeRule[] = [];
  for (const given of rules) {
    const r: MergeRule = {
      merge_property_1_type: noNul(given.merge_property_1_type),
      merge_property_1_value: noNul(given.merge_property_1_value),
      merge_property_2_type: given.merge_property_2_type === null ? null : noNul(given.merge_property_2_type),
      merge_property_2_value: given.merge_property_2_value === null ? null : noNul(given.merge_property_2_value),
    };
    const key = JSON.stringify([r.merge_property_1_type, r.merge_property_1_value, r.merge_property_2_type, r.merge_property_2_value]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(r);
  }
  return out;
}

// An identifier as one string; \u0000 cannot occur in PostgreSQL text, so it cannot collide.
function keyOf(type: string, value: string): string {
  return `${type}\u0000${value}`;
}

function splitKey(key: string): { t: string; v: string } {
  const i = key.indexOf("\u0000");
  return { t: key.slice(0, i), v: key.slice(i + 1) };
}

/** Union-find over identifiers and rudder_ids, with path halving. */
class Groups {
  private readonly ids = new Map<string, number>();
  private readonly parent: number[] = [];

  add(key: string): number {
    let i = this.ids.get(key);
    if (i === undefined) {
      i = this.parent.length;
      this.ids.set(key, i);
      this.parent.push(i);
    }
    return i;
  }

  index(key: string): number | undefined {
    return this.ids.get(key);
  }

  keys(): string[] {
    return [...this.ids.keys()];
  }

  find(i: number): number {
    while (this.parent[i] !== i) {
      this.parent[i] = this.parent[this.parent[i]!]!;
      i = this.parent[i]!;
    }
    return i;
  }

  union(a: number, b: number): void {
    const ra = this.find(a);
    const rb = this.find(b);
    if (ra !== rb) this.parent[Math.max(ra, rb)] = Math.min(ra, rb);
  }
}

const MAX_IDENTIFIER_BYTES = 63;

function checkNamespace(namespace: string): void {
  if (!namespace || Buffer.byteLength(namespace) > MAX_IDENTIFIER_BYTES || namespace.includes("\0")) {
    throw new AppError("BAD_REQUEST", `warehouse namespace name must be 1–${MAX_IDENTIFIER_BYTES} bytes: ${JSON.stringify(namespace.slice(0, 80))}`);
  }
}

function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function qualified(namespace: string, table: string): string {
  return `${ident(namespace)}.${ident(table)}`;
}
