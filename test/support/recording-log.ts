// A Logger that keeps every line it is given, for tests that assert what a
// module logs (its level, message and fields) without a log stream to parse.
import type { LogFields, Logger, LogLevel } from "../../core/log.ts";

export interface LogLine {
  level: LogLevel;
  msg: string;
  fields: LogFields | undefined;
}

export function recordingLog(): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const log: Logger = {
    debug: (msg, fields) => void lines.push({ level: "debug", msg, fields }),
    info: (msg, fields) => void lines.push({ level: "info", msg, fields }),
    warn: (msg, fields) => void lines.push({ level: "warn", msg, fields }),
    error: (msg, fields) => void lines.push({ level: "error", msg, fields }),
    child: () => log,
    enabled: () => true,
  };
  return { log, lines };
}
