// The actor conformance suite on the embedded host: replica processes of the
// test actor app with lmdb under their data dirs, killed with -9 and
// restarted where the cases say so.
import t from "tap";
import { startTarget } from "./conformance-target.ts";
import { runConformance } from "./conformance.ts";

t.setTimeout(120_000); // several cases wait on idle timeouts, reminders and restarts

const target = await startTarget("embedded", 1);
t.teardown(() => target.stop());
await runConformance(t, target);
