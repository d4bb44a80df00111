/**
 * What a failed PostgreSQL statement (Bun.sql) was: its SQLSTATE, and whether the connection
 * failed rather than the statement. One definition for every PostgreSQL user: the cluster's
 * stores, `migrate-to-postgres` and the warehouse loader.
 */

export const UNIQUE_VIOLATION = "23505";
export const DEADLOCK = "40P01";

/**
 * The SQLSTATE: Bun.sql puts it in `errno`; drizzle and our AppErrors keep the client's error
 * in `cause`, so a few levels of causes are looked through. "" when there is none.
 */
export function sqlState(err: unknown): string {
  let e = err as { errno?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 4; depth++, e = e.cause as typeof e) {
    if (typeof e.errno === "string") return e.errno;
  }
  return "";
}

/**
 * The connection failed or could not be made (the client's error codes, and SQLSTATE class 08
 * or an administrator's shutdown, 57P0x): the statement may not have run, and trying again
 * later may succeed.
 */
export function isConnectionFailure(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (
    typeof code === "string" &&
    /^ERR_POSTGRES_(CONNECTION|IDLE_TIMEOUT|LIFETIME_TIMEOUT|TLS)|^E(CONNREFUSED|CONNRESET|PIPE|TIMEDOUT|HOSTUNREACH|NETUNREACH|NOTFOUND|AI_AGAIN)$/.test(code)
  ) {
    return true;
  }
  return /^(08|57P0)/.test(sqlState(err));
}
