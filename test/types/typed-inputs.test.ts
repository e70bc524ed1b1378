// Inputs are typed from their declarations: compiles
// test/types/fixtures/ (misspelled.ts, event-payloads.ts) alone with the project's compiler
// options and checks that exactly their lines marked `// error TSnnnn` fail,
// each with that code: a misspelled actor input field or method name (through
// callActor and through an actor-to-actor ctx.call), a wrong actor type name
// in an actorRef, a timer naming a missing method, an unknown path
// parameter, the wrong credential kind for the route's auth mode, a
// misspelled body field in a route's billing estimate; an
// organization event of an unlisted type or with the wrong `data`.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import t from "tap";

t.setTimeout(120_000); // one tsc run over the fixture and what it imports (~10-30 s on 2 shared cores)

const repo = join(import.meta.dirname, "../..");
const fixtureDir = "test/types/fixtures";
const fixtures = readdirSync(join(repo, fixtureDir))
  .filter((name) => name.endsWith(".ts"))
  .sort()
  .map((name) => `${fixtureDir}/${name}`);
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");

const expected = fixtures.flatMap((fixture) =>
  readFileSync(join(repo, fixture), "utf8")
    .split("\n")
    .flatMap((line, i) => {
      const marker = /\/\/ error (TS\d+)$/.exec(line);
      return marker ? [`${fixture}:${i + 1} ${marker[1]}`] : [];
    }),
);

const run = spawnSync(process.execPath, [tsc, "--noEmit", "--pretty", "false", "-p", "test/types/fixtures"], { cwd: repo, encoding: "utf8" });
const reported = run.stdout
  .split("\n")
  .flatMap((line) => {
    const error = /^(.+?)\((\d+),\d+\): error (TS\d+):/.exec(line);
    return error ? [{ file: error[1]!, at: `${error[1]}:${error[2]} ${error[3]}`, line }] : [];
  });

t.test("the fixtures fail to compile exactly where they are marked", async (t) => {
  t.ok(expected.length >= 10, `${expected.length} marked lines`);
  t.not(run.status, 0, "tsc exits non-zero");
  t.same(
    reported.filter((e) => !fixtures.includes(e.file)).map((e) => e.line),
    [],
    "no errors outside the fixtures",
  );
  t.same(
    reported.map((e) => e.at).sort(),
    [...expected].sort(),
    "each marked line fails with its code and every unmarked line compiles",
  );
  t.comment(reported.map((e) => e.line).join("\n"));
});
