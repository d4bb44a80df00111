/**
 * The connection a POSTGRES destination's config names (postgresConnection in index.ts builds
 * it): owned by the kind, used by the warehouse's loader (src/warehouse/postgres-loader.ts). Types
 * only, so the load thread can import it without the kind's schema.
 */
export type PostgresSslMode = "disable" | "allow" | "prefer" | "require" | "verify-ca" | "verify-full";

export interface PostgresConfig {
  host: string;
  port?: number;
  database: string;
  user: string;
  password?: string;
  sslMode?: PostgresSslMode;
  /** Seconds to wait for a connection before the load fails as retryable. */
  connectTimeoutSeconds?: number;
}
