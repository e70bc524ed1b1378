// Loaded with `node --import` (through NODE_OPTIONS, so every child process
// a test starts loads it too; worker threads do not read NODE_OPTIONS, so
// the Worker constructor is wrapped to pass the same --import): moves the wall clock by
// TROUPE_CLOCK_SHIFT_MS, so `Date.now()` and `new Date()` read another date
// while time still runs. scripts/other-dates.sh computes one shift per target
// date before the run, so every process of that run agrees on the date.
// A test that passes here on a month end, a leap day and a year end does not
// read the calendar; a test that reads the real clock where it should take an
// injected one fails here on some date. Timers and performance.now() are
// untouched: only the calendar moves.
import { createRequire, syncBuiltinESMExports } from "node:module";
import { pathToFileURL } from "node:url";
import type * as WorkerThreads from "node:worker_threads";

const shiftMs = Number(process.env.TROUPE_CLOCK_SHIFT_MS ?? "0");
if (!Number.isFinite(shiftMs)) throw new Error(`TROUPE_CLOCK_SHIFT_MS is not a number: ${process.env.TROUPE_CLOCK_SHIFT_MS}`);

if (shiftMs !== 0) {
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  const now = () => realNow() + shiftMs;
  // A subclass keeps every static (parse, UTC) and instanceof Date; only the
  // no-argument forms read the shifted clock.
  class ShiftedDate extends RealDate {
    constructor(...args: ConstructorParameters<DateConstructor> | []) {
      if (args.length === 0) super(now());
      else super(...(args as ConstructorParameters<DateConstructor>));
    }
    static override now(): number {
      return now();
    }
  }
  // Called without `new`, Date() answers the current time as a string.
  const DateFunction = new Proxy(ShiftedDate, {
    apply: () => new RealDate(now()).toString(),
  });
  globalThis.Date = DateFunction as DateConstructor;

  const workers = createRequire(import.meta.url)("node:worker_threads") as typeof WorkerThreads;
  const RealWorker = workers.Worker;
  // A worker ignores --import in its execArgv: a file worker starts as a
  // script that loads this module, then the worker's own file.
  class ShiftedWorker extends RealWorker {
    constructor(filename: string | URL, options: WorkerThreads.WorkerOptions = {}) {
      if (options.eval === true) {
        super(filename, options);
        return;
      }
      const file = filename instanceof URL ? filename.href : pathToFileURL(filename).href;
      const start = `import(${JSON.stringify(import.meta.url)}).then(() => import(${JSON.stringify(file)}))`;
      super(start, { ...options, eval: true });
    }
  }
  workers.Worker = ShiftedWorker;
  // ESM imports of node:worker_threads read the builtin's exports as they were: bring them up to date.
  syncBuiltinESMExports();
}
