// `npm start`: one Troupe process. Embedded by default (no other service
// needed); the cluster launcher runs the same file with TROUPE_MODE=dapr.
// First: uWS reads its settings from the environment when it loads.
import "./uws-settings.ts";
import { loadConfig } from "../gateway/config.ts";
import { createLogger } from "../core/log.ts";
import { startTroupe } from "./app.ts";
import { startRefusal } from "./uws-binary-pins.ts";
import { loadedUwsBinary } from "./uws-error-pages.ts";
import { ownerOnlyUmask } from "./data-dir.ts";

// Before anything is created: every file Troupe writes (the data directory's
// lmdb stores hold webhook secrets) is readable by its owner only (data-dir.ts).
process.umask(ownerOnlyUmask);

const config = loadConfig();
const log = createLogger(config.logLevel, { replica: config.replica });

// The binary must be the pinned uws-pack build with its error pages patched
// (scripts/patch-uws-errors.ts): with `refuse`, anything else stops here.
const uwsRefusal = startRefusal(config.uwsBinaryCheck, loadedUwsBinary());
if (uwsRefusal !== undefined) {
  process.stderr.write(`Troupe could not start: ${uwsRefusal}\n`);
  process.exit(1);
}

try {
  const troupe = await startTroupe(config, log);
  process.stdout.write(`Troupe (${config.mode}) listening on ${troupe.url}\n`);
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    troupe
      .stop()
      .then(() => process.exit(0))
      .catch((error: unknown) => {
        log.error("shutdown failed", { error });
        process.exit(1);
      });
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  // SIGHUP rereads TROUPE_DEPLOYMENTS_FILE (docs/operations/deployments.md): calls in flight finish on the old
  // deployments; an invalid file keeps them and says why in the log. Without the file, SIGHUP changes nothing.
  process.on("SIGHUP", () => {
    const deployments = troupe.services.router.deployments;
    if (deployments) void deployments.reload(log);
    else log.warn("SIGHUP ignored: TROUPE_DEPLOYMENTS_FILE is not set");
  });
} catch (error) {
  log.error("could not start", { error });
  // Also in plain words on stderr, where whoever started it looks first.
  process.stderr.write(`Troupe could not start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
