/** Structured logs: one JSON object per line on stdout. */
export type Level = "debug" | "info" | "warn" | "error";
const RANK: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
  enabled(level: Level): boolean;
}

export function createLogger(
  level: Level = "info",
  base: Record<string, unknown> = {},
  write: (line: string) => void = (line) => process.stdout.write(line + "\n"),
): Logger {
  const min = RANK[level];
  const emit = (lvl: Level, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[lvl] < min) return;
    const rec: Record<string, unknown> = { time: new Date().toISOString(), level: lvl, msg, ...base, ...fields };
    if (rec.err instanceof Error) rec.err = { message: rec.err.message, stack: rec.err.stack };
    write(JSON.stringify(rec));
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (fields) => createLogger(level, { ...base, ...fields }, write),
    enabled: (l) => RANK[l] >= min,
  };
}

/** For tests and tools that want quiet. */
export const silentLogger: Logger = createLogger("error", {}, () => {});
