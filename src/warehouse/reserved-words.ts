/**
 * PostgreSQL's reserved words as RudderStack's warehouse transform lists them
 * (rudder-server warehouse/transformer/internal/reservedkeywords/reservedtablescolumns.json,
 * key "POSTGRES", commit 6082cea2a81095c137fc7f489f68d53d41a6230f). A table or column named
 * like one of these gets a leading underscore, so warehouses loaded by RudderStack and by
 * Sluice end up with the same names. Kept as RudderStack has it, not PostgreSQL's own
 * (longer) list: matching RudderStack's names is the point.
 */
export const POSTGRES_RESERVED_WORDS: ReadonlySet<string> = new Set(
  (
    "all analyse analyze and any array as asc asymmetric authorization between binary both case cast check " +
    "collate column constraint create cross current_date current_role current_time current_timestamp " +
    "current_user default deferrable desc distinct do else end except false for foreign freeze from " +
    "full grant group having ilike in initially inner intersect into is isnull join leading left like " +
    "limit localtime localtimestamp natural new not notnull null off offset old on only or order outer " +
    "overlaps placing primary references right select session_user similar some symmetric table then " +
    "to trailing true union unique user using verbose when where"
  ).split(" "),
);
