// Structured JSON logs, one line per event. Callers never pass secrets; the
// logger also drops fields whose names say they hold one, as a second guard.
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

const levelRank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };
const secretField = /authorization|password|secret|token|api_?key|cookie/i;

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
  enabled(level: LogLevel): boolean;
}

export function createLogger(level: LogLevel, base: LogFields = {}, write: (line: string) => void = (l) => process.stdout.write(l)): Logger {
  const threshold = levelRank[level];
  const emit = (lvl: LogLevel, msg: string, fields?: LogFields): void => {
    if (levelRank[lvl] < threshold) return;
    const record: LogFields = { ts: new Date().toISOString(), level: lvl, msg };
    for (const [k, v] of Object.entries(base)) record[k] = v;
    if (fields) for (const [k, v] of Object.entries(fields)) record[k] = secretField.test(k) ? "[redacted]" : v;
    write(JSON.stringify(record, errorReplacer) + "\n");
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (fields) => createLogger(level, { ...base, ...fields }, write),
    enabled: (lvl) => levelRank[lvl] >= threshold,
  };
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  return value;
}
