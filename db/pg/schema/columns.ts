/** Column helpers shared by the pg schema files (not tables: index.ts does not re-export them). */
import { bigint, customType } from "drizzle-orm/pg-core";

/** Epoch milliseconds as a JS number: how the SQLite schema stores every time. */
export const ms = (name: string) => bigint(name, { mode: "number" });

/** PostgreSQL's 64-bit transaction id, kept as text in JS (compare it in SQL, not in JS). */
export const xid8 = customType<{ data: string; driverData: string }>({ dataType: () => "xid8" });
