import pkg from "../package.json";

export const VERSION: string = pkg.version;

/**
 * A version as the database file records it (PRAGMA user_version, a 32-bit integer):
 * major × 1,000,000 + minor × 1,000 + patch, so newer versions always compare higher.
 * A pre-release suffix is dropped: 0.3.0-rc.1 records as 0.3.0.
 */
export function versionNumber(version: string): number {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!m || Number(m[2]) > 999 || Number(m[3]) > 999 || Number(m[1]) > 2000) throw new Error(`version '${version}' is not MAJOR.MINOR.PATCH with MINOR and PATCH below 1000`);
  return Number(m[1]) * 1_000_000 + Number(m[2]) * 1_000 + Number(m[3]);
}

/** The inverse of versionNumber. */
export function versionName(n: number): string {
  return `${Math.floor(n / 1_000_000)}.${Math.floor(n / 1_000) % 1_000}.${n % 1_000}`;
}
