/** PostgreSQL connection URLs as users give them (--database, SLUICE_DATABASE_URL). */

/** Why `url` is not a PostgreSQL URL, or undefined when it is one. */
export function databaseUrlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `--database is not a URL; expected postgres://USER:PASSWORD@HOST:PORT/DB`;
  }
  // Bun.sql picks its driver by the scheme: mysql:// would be taken to another database.
  if (u.protocol !== "postgres:" && u.protocol !== "postgresql:") return `--database must be a postgres:// or postgresql:// URL, not ${u.protocol}//…`;
  return undefined;
}

/** The URL as it may be printed: no password, in the userinfo or in the query. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "";
    for (const key of [...u.searchParams.keys()]) if (/^(password|pass|sslpassword)$/i.test(key)) u.searchParams.set(key, "***");
    return u.toString();
  } catch {
    return "(the --database URL, which is not a valid URL)";
  }
}
