// bench/semantic-threshold.ts, the command a deployment re-measures its
// threshold with, run against a live Troupe over real sockets with the
// simulated model: it must print the same table and choose the same
// threshold as the in-process measurement (semantic-precision.test.ts), so
// the HTTP path embeds exactly what the cache would.
import t from "tap";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { simulatedVector } from "../../providers/simulated/embed.ts";
import { SIMULATED_EMBED_THRESHOLD } from "../../gateway/cache/semantic-defaults.ts";
import { chooseThreshold, cosineSimilarity, formatThresholdTable, labelledPairsSchema, thresholdTable } from "../../gateway/cache/semantic-threshold.ts";
import { signup, startTestTroupe } from "../support/troupe.ts";

function run(argv: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["bench/semantic-threshold.ts", ...argv], { cwd: new URL("../..", import.meta.url).pathname, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    child.once("exit", (code) => resolve({ code, out, err }));
  });
}

t.test("the threshold command against a live Troupe chooses what the in-process measurement chooses", async (t) => {
  const troupe = await startTestTroupe();
  t.teardown(() => troupe.stop());
  const user = await signup(troupe, "semantic-threshold");
  const result = await run(["--model", "simulated-embed", "--url", `http://127.0.0.1:${troupe.port}`], { ...process.env, TROUPE_API_KEY: user.testKey });
  t.equal(result.code, 0, result.err);
  t.match(result.out, /^simulated-embed \(simulated\) on 216 labelled pairs \(106 same meaning\)$/m);
  t.match(result.out, new RegExp(`chosen threshold ${SIMULATED_EMBED_THRESHOLD}: precision 1\\.000`));

  const { pairs } = labelledPairsSchema.parse(JSON.parse(readFileSync(new URL("../fixtures/semantic-cache-pairs.json", import.meta.url), "utf8")));
  const rows = thresholdTable(pairs, pairs.map((p) => cosineSimilarity(simulatedVector(p.a), simulatedVector(p.b))));
  t.ok(result.out.includes(formatThresholdTable(rows, chooseThreshold(rows, 0.95)?.threshold)), "the same table, row for row");

  const refused = await run(["--model", "simulated-embed", "--url", `http://127.0.0.1:${troupe.port}`], { ...process.env, TROUPE_API_KEY: "tr_test_not_a_key" });
  t.not(refused.code, 0, "a refused key fails the command");
  t.match(refused.err, /POST \/v1\/embeddings answered 401/);
});
