// Upstream deployments (docs/operations/deployments.md) through the router
// over real sockets: three OpenAI fakes as three deployments of openai,
// weighted 1:1:2, counted at each fake; a deployment answering 429 is
// skipped with no failed call; a deployment's breaker opens and closes on an
// injected clock; its rpm limit sends the overflow elsewhere; the file is
// reloaded under load with nothing dropped, and an invalid file at reload
// keeps the old set.
import t from "tap";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../gateway/config.ts";
import { createRouter } from "../../providers/index.ts";
import { parseDeploymentsFile } from "../../providers/deployments-file.ts";
import { startOpenAIFake } from "../fakes/openai-fake.ts";
import type { FakeServer } from "../fakes/fake-server.ts";

t.setTimeout(120_000);

const keys = ["sk-a", "sk-b", "sk-c"];
const fakes: FakeServer[] = [];
for (const k of keys) fakes.push(await startOpenAIFake({ apiKey: k }));
t.teardown(() => Promise.all(fakes.map((f) => f.close())));

const dir = mkdtempSync(join(tmpdir(), "troupe-deployments-"));
const file = join(dir, "deployments.json");

interface Entry {
  name: string;
  weight?: number;
  rpm?: number;
  tpm?: number;
  key?: string;
  fake?: number;
}
function writeFile(entries: Entry[]): void {
  const deployments = entries.map((e, i) => ({
    name: e.name,
    provider: "openai",
    api_key: e.key ?? keys[e.fake ?? i],
    base_url: `${fakes[e.fake ?? i]!.url}/v1`,
    weight: e.weight ?? 1,
    ...(e.rpm !== undefined ? { rpm: e.rpm } : {}),
    ...(e.tpm !== undefined ? { tpm: e.tpm } : {}),
  }));
  writeFileSync(file, JSON.stringify({ deployments }));
}

let clockMs = Date.parse("2026-03-01T00:00:00Z");
const now = () => clockMs;

function routerOver(entries: Entry[]) {
  writeFile(entries);
  // One router attempt: only the pool's own failover can save a call a deployment failed.
  const cfg = loadConfig({ TROUPE_DEPLOYMENTS_FILE: file, PROVIDER_MAX_ATTEMPTS: "1" }).providers;
  return createRouter(cfg, { now, breaker: { consecutiveFailures: 3, halfOpenAfterMs: 10_000 }, backoff: { initialDelayMs: 1, maxDelayMs: 2 } });
}

const chat = (router: ReturnType<typeof routerOver>, i: number) =>
  router.chat({ model: "gpt-4o-mini", routing_strategy: "manual", messages: [{ role: "user", content: `call ${i}` }] });

function resetCounts(): void {
  for (const f of fakes) {
    f.requests.length = 0;
    f.faults.queue.length = 0;
    f.faults.failureRate = 0;
  }
}
const counts = () => fakes.map((f) => f.requests.length);

/** Runs `n` calls, `concurrency` at a time; resolves with the failures. */
async function drive(router: ReturnType<typeof routerOver>, n: number, concurrency: number, during?: (i: number) => void): Promise<unknown[]> {
  const failures: unknown[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        during?.(i);
        await chat(router, i).catch((e: unknown) => failures.push(e));
      }
    }),
  );
  return failures;
}

t.test("4,000 calls split 1:1:2 within ±5 % of the weights, counted at the fakes", async (t) => {
  resetCounts();
  const router = routerOver([{ name: "east", weight: 1 }, { name: "west", weight: 1 }, { name: "north", weight: 2 }]);
  t.teardown(() => router.close());
  const failures = await drive(router, 4000, 16);
  t.same(failures, []);
  const expected = [1000, 1000, 2000];
  const got = counts();
  got.forEach((n, i) => t.ok(Math.abs(n - expected[i]!) <= expected[i]! * 0.05, `deployment ${i}: ${n} calls, expected ${expected[i]} ± 5 %`));
  // Each fake saw its own deployment's key only.
  fakes.forEach((f, i) => t.ok(f.requests.every((r) => r.headers.authorization === `Bearer ${keys[i]}`), `fake ${i} got only its key`));
  const readings = router.deploymentReadings();
  t.same(
    readings.map((r) => [r.deployment, r.calls, r.errors, r.state]),
    [
      ["east", got[0], 0, "closed"],
      ["west", got[1], 0, "closed"],
      ["north", got[2], 0, "closed"],
    ],
  );
});

t.test("a deployment answering 429 is skipped: its traffic goes to the others, no call fails", async (t) => {
  resetCounts();
  const router = routerOver([{ name: "east", weight: 1 }, { name: "west", weight: 1 }, { name: "north", weight: 2 }]);
  t.teardown(() => router.close());
  Object.assign(fakes[2]!.faults, { failureRate: 1, failureStatus: 429 });
  const failures = await drive(router, 400, 8);
  t.same(failures, [], "no call failed");
  const [a, b, c] = counts();
  t.equal(a! + b!, 400, "every call was served by east or west");
  t.ok(Math.abs(a! - b!) <= 40, `east ${a} and west ${b} share the load`);
  t.ok(c! >= 1 && c! <= 10, `north was tried ${c} times before it was skipped (breaker after 3, cooling after a 429)`);
  const north = router.deploymentReadings().find((r) => r.deployment === "north")!;
  t.equal(north.errors, c);
  t.equal(north.state, "open", "north's own breaker opened");
  t.equal(router.breakerStates().find((s) => s.provider === "openai")?.state, "closed", "the provider as a whole still takes calls");
});

t.test("a deployment's breaker opens after failures and closes after its pause (injected clock)", async (t) => {
  resetCounts();
  const router = routerOver([{ name: "east" }, { name: "west" }]);
  t.teardown(() => router.close());
  Object.assign(fakes[0]!.faults, { failureRate: 1, failureStatus: 500 });
  t.same(await drive(router, 20, 1), []);
  const state = () => router.deploymentReadings().find((r) => r.deployment === "east")!.state;
  t.equal(state(), "open");
  const triedWhileOpen = fakes[0]!.requests.length;
  t.same(await drive(router, 10, 1), []);
  t.equal(fakes[0]!.requests.length, triedWhileOpen, "an open breaker sends nothing to east");
  fakes[0]!.faults.failureRate = 0;
  clockMs += 10_001;
  t.same(await drive(router, 10, 1), []);
  t.equal(state(), "closed", "the probe succeeded and closed it");
  t.ok(fakes[0]!.requests.length > triedWhileOpen + 1, "east serves again");
});

t.test("a deployment at its rpm limit is skipped; when every one is, the call is a 503 naming the wait", async (t) => {
  resetCounts();
  const router = routerOver([{ name: "east", rpm: 5 }, { name: "west", rpm: 5 }]);
  t.teardown(() => router.close());
  t.same(await drive(router, 10, 1), []);
  t.same(counts().slice(0, 2), [5, 5]);
  const headroom = router.deploymentReadings().map((r) => r.rpm_headroom);
  t.same(headroom, [0, 0]);
  const refused = await chat(router, 11).catch((e: unknown) => e);
  t.match(refused, { code: "no_provider_available" });
  clockMs += 60_001;
  t.same(await drive(router, 2, 1), [], "the next minute takes calls again");
});

t.test("a deployment past its tpm this minute is skipped until the minute has passed", async (t) => {
  resetCounts();
  const router = routerOver([{ name: "east", tpm: 5 }, { name: "west" }]);
  t.teardown(() => router.close());
  t.same(await drive(router, 6, 1), []);
  t.same(counts().slice(0, 2), [1, 5], "east's one answer used its 5 tokens: the rest went west");
  t.same(router.deploymentReadings()[0]?.tpm_headroom, 0);
  clockMs += 60_001;
  t.same(await drive(router, 2, 1), []);
  t.equal(counts()[0], 2, "east takes calls again the next minute");
});

t.test("reload under load drops nothing; an invalid file at reload keeps the old set", async (t) => {
  resetCounts();
  const router = routerOver([{ name: "east" }, { name: "west" }]);
  t.teardown(() => router.close());
  const reloads: Promise<unknown>[] = [];
  const failures = await drive(router, 600, 12, (i) => {
    if (i === 150) {
      writeFile([{ name: "north", fake: 2 }]);
      reloads.push(router.deployments!.reload());
    }
  });
  t.same(failures, [], "no call failed across the reload");
  t.same(await Promise.all(reloads), [{ ok: true, deployments: ["north"] }]);
  const [a, b, c] = counts();
  t.equal(a! + b! + c!, 600);
  t.ok(c! > 300, `north took the calls after the reload (${c})`);
  const before = fakes[2]!.requests.length;

  writeFileSync(file, JSON.stringify({ deployments: [{ name: "bad", provider: "openai", api_key: "k", weight: 0 }] }));
  const outcome = await router.deployments!.reload();
  t.match(outcome, { ok: false, error: /deployments\[0\]\.weight/ });
  t.same(await drive(router, 10, 2), []);
  t.equal(fakes[2]!.requests.length, before + 10, "the old set (north) still serves");
  t.same(router.deploymentReadings().map((r) => r.deployment), ["north"]);
});

t.test("the file's errors name the field", async (t) => {
  t.throws(() => parseDeploymentsFile("{", "d.json"), /d\.json: not JSON/);
  t.throws(() => parseDeploymentsFile(JSON.stringify({ deployments: [{ name: "a", provider: "openai", api_key: "k" }, { name: "a", provider: "nope", api_key: "k" }] }), "d.json"), /deployments\[1\]\.provider/);
  t.throws(() => parseDeploymentsFile(JSON.stringify({ deployments: [{ name: "a", provider: "openai", api_key: "k" }, { name: "a", provider: "openai", api_key: "k" }] }), "d.json"), /deployments\[1\]\.name: deployment name a is used twice/);
  t.throws(() => parseDeploymentsFile(JSON.stringify({ deployments: [{ name: "a", provider: "azure", api_key: "k" }] }), "d.json"), /deployments\[0\]\.base_url/);
  t.throws(() => parseDeploymentsFile(JSON.stringify({ deployments: [{ name: "a", provider: "openai", api_key: "k", azure_deployments: { x: "y" } }] }), "d.json"), /azure_deployments/);
});

t.test("/metrics' exposition carries each deployment's traffic, errors, breaker and headroom", async (t) => {
  const { createPrometheusMetrics } = await import("../../core/prometheus-metrics.ts");
  resetCounts();
  const router = routerOver([{ name: "east", rpm: 100 }, { name: "west" }]);
  t.teardown(() => router.close());
  fakes[1]!.faults.queue.push({ kind: "status", status: 500 });
  t.same(await drive(router, 4, 1), []);
  const metrics = createPrometheusMetrics({ replica: "r1" });
  const { body } = await metrics.exposition({ deployments: () => router.deploymentReadings() }).render();
  const line = (name: string, deployment: string) => body.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(`deployment="${deployment}"`));
  t.match(line("troupe_deployment_calls", "east"), / 3$/, "east: 2 of its own picks and 1 failover from west");
  t.match(line("troupe_deployment_calls", "west"), / 2$/);
  t.match(line("troupe_deployment_errors", "west"), / 1$/);
  t.match(line("troupe_deployment_breaker_state", "west"), / 0$/);
  t.match(line("troupe_deployment_rpm_headroom", "east"), / 97$/);
  t.equal(line("troupe_deployment_rpm_headroom", "west"), undefined, "no rpm: no headroom series");
});
