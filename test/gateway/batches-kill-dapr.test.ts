// kill -9 mid-batch on the Dapr host (TROUPE_MODE=dapr): two replicas, each
// a Troupe with its own daprd, sharing Redis, placement and scheduler. A
// 300-line batch is created through the openai SDK; while its lines are in
// flight the replica hosting the BatchActor (the one whose runner calls the
// provider) is killed -9 with its daprd. The actor fails over to the
// survivor, whose watchdog reminder kicks its runner: the dead epoch's
// leases are leased again and the batch completes there. Every line is
// answered exactly once (the output file), billed exactly once (the
// cluster's Redis ledger), and at most twice BATCH_CONCURRENCY lines reach
// the OpenAI fake (in this test process) twice: those in their model call at
// the kill, and those answered but still waiting (at most 25 ms) to be
// stored with their group (docs/api/batches.md).
import OpenAI, { toFile } from "openai";
import t from "tap";
import { startDaprOpenAICluster } from "../support/dapr-openai-cluster.ts";
import { waitFor } from "../support/net.ts";
import { request, signup } from "../support/troupe.ts";
import { projectUsage } from "../jobs/usage-reader.ts";

t.setTimeout(180_000);
const concurrency = 8;
const lines = 300;
const { openai: fake, cluster, ledger, urls } = await startDaprOpenAICluster({ label: "batches-kill-dapr", replicas: 2, appEnv: { BATCH_CONCURRENCY: String(concurrency), BATCH_WATCHDOG_MS: "500" } });

/** How many BatchActors replica i's daprd hosts now. */
async function batchActorsOn(i: number): Promise<number> {
  const meta = (await (await fetch(`${cluster.replicas[i]!.daprHttpUrl}/v1.0/metadata`)).json()) as { actorRuntime?: { activeActors?: { type: string; count: number }[] } };
  return meta.actorRuntime?.activeActors?.find((a) => a.type === "BatchActor")?.count ?? 0;
}

/** The chat calls the fake has received and not yet answered (or seen cut off). */
const ended = new Map<object, boolean>();
function inFlightAtFake(): number {
  for (const r of fake.requests) {
    if (!r.path.endsWith("/chat/completions") || ended.has(r)) continue;
    ended.set(r, false);
    void fake.outcome(r).then(() => ended.set(r, true));
  }
  return [...ended.values()].filter((done) => !done).length;
}

/** Provider calls per input line (the fake's chat requests, by the line's prompt). */
function callsPerLine(): Map<number, number> {
  const calls = new Map<number, number>();
  for (const r of fake.requests) {
    if (!r.path.endsWith("/chat/completions")) continue;
    const content = (r.body as { messages?: { content?: unknown }[] }).messages?.[0]?.content;
    const index = Number(/^line (\d+)$/.exec(String(content))?.[1] ?? -1);
    calls.set(index, (calls.get(index) ?? 0) + 1);
  }
  return calls;
}

t.test("a batch whose host replica is killed -9 with its daprd completes on the survivor: every line answered once, billed once", async (t) => {
  const user = await signup({ request: (m, p, o) => request(urls[0]!, m, p, o) }, "kill-batches-dapr");
  const sdk = (i: number) => new OpenAI({ baseURL: `${urls[i]}/openai/v1`, apiKey: user.testKey, maxRetries: 3 });
  const text = Array.from({ length: lines }, (_, i) => JSON.stringify({ custom_id: `k-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "gpt-4.1-mini", messages: [{ role: "user", content: `line ${i}` }], max_tokens: 10 } })).join("\n");
  // Slow enough that the kill lands mid-batch, with lines in flight: 8 at a time, ~200 ms each.
  fake.faults.delayMs = 200;
  const file = await sdk(0).files.create({ file: await toFile(Buffer.from(text), "kill.jsonl"), purpose: "batch" });
  const batch = await sdk(0).batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  for (;;) {
    const b = await sdk(0).batches.retrieve(batch.id);
    if (b.request_counts!.completed >= 40 && inFlightAtFake() >= 4) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const hosts = [await batchActorsOn(0), await batchActorsOn(1)];
  t.equal(hosts[0]! + hosts[1]!, 1, `one replica hosts the BatchActor (${JSON.stringify(hosts)})`);
  const victim = hosts[1]! > 0 ? 1 : 0;
  const survivor = 1 - victim;
  const pending = inFlightAtFake();
  await cluster.killReplica(victim);
  const atKill = [...callsPerLine().values()].reduce((a, b) => a + b, 0);
  t.ok(atKill < lines, `killed replica ${victim} mid-batch: ${atKill} of ${lines} calls made`);
  fake.faults.delayMs = 5;

  let done = await sdk(survivor).batches.retrieve(batch.id);
  await waitFor(async () => ((done = await sdk(survivor).batches.retrieve(batch.id)), done.status === "completed"), 120_000, `the batch to complete on replica ${survivor}`);
  t.equal(done.status, "completed");
  t.same(done.request_counts, { total: lines, completed: lines, failed: 0 });
  t.equal(await batchActorsOn(survivor), 1, `replica ${survivor} hosts the BatchActor now`);
  const output = (await (await sdk(survivor).files.content(done.output_file_id!)).text()).split("\n").filter((l) => l !== "");
  const ids = output.map((l) => (JSON.parse(l) as { custom_id: string }).custom_id);
  t.equal(ids.length, lines, "one output line per input line");
  t.same([...new Set(ids)].sort(), Array.from({ length: lines }, (_, i) => `k-${i}`).sort(), "each line answered exactly once");

  const calls = callsPerLine();
  t.same([...calls.keys()].sort((a, b) => a - b), Array.from({ length: lines }, (_, i) => i), "every line reached the provider");
  const twice = [...calls].filter(([, n]) => n > 1).map(([i]) => i);
  t.comment(`${[...calls.values()].reduce((a, b) => a + b, 0)} provider calls; lines called twice: ${JSON.stringify(twice)}`);
  t.ok(twice.length >= 1 && twice.length <= 2 * concurrency, `${twice.length} lines reached the fake twice (${pending} were in flight at the kill): at least one, at most the ${concurrency} in their model call and the ${concurrency} waiting for their group`);
  t.same([...calls].filter(([, n]) => n > 2), [], "no line reached it three times");

  // The dead replica's usage journal (its own TROUPE_DATA_DIR) holds the records its recorder had not yet
  // flushed to Redis; its restart replays them (docs/operations/usage-journal.md), as a restarted pod's would.
  const lineRecords = async () => (await projectUsage(ledger, user.projectId)).filter((u) => u.request_id.startsWith(`batch:${batch.id}:line:`));
  t.comment(`before replica ${victim} restarts: ${(await lineRecords()).length} of ${lines} lines in the ledger`);
  await cluster.startReplica(victim);
  await waitFor(async () => (await lineRecords()).length >= lines, 30_000, `replica ${victim}'s journal replayed to the ledger`);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const billed = (await lineRecords()).map((u) => u.request_id);
  t.equal(billed.length, lines, "one usage record per line in the ledger");
  t.same([...billed].sort(), Array.from({ length: lines }, (_, i) => `batch:${batch.id}:line:${i}`).sort(), "each line billed exactly once");
});
