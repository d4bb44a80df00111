import { defineConfig } from "drizzle-kit";

// Cluster mode's PostgreSQL schema (issue 24); drizzle.config.ts is SQLite's.
export default defineConfig({
  dialect: "postgresql",
  schema: "./db/pg/schema/index.ts",
  out: "./db/pg/migrations",
});
