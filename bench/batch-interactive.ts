// `npm run bench:batch`: does a running batch slow interactive chat down?
// One Troupe (embedded host, child process, simulated provider) takes
// interactive POST /openai/v1/chat/completions at a fixed rate (open loop:
// each request is sent at its time whatever the others do) for
// --seconds, first alone, then with a large batch running on the same
// process; it prints the interactive p50/p99 of both phases side by side,
// their ratio, and the batch lines answered during the second phase.
//
// Flags: --rate=500 (interactive requests/s) --seconds=10 --lines=20000
//        --latency-ms=20 (simulated provider latency) --concurrency=8 (BATCH_CONCURRENCY)
import OpenAI, { toFile } from "openai";
import { Pool } from "undici";
import { startEmbeddedTroupe } from "./lib/embedded-troupe.ts";
import { fmt, summarize } from "../load/stats.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split(/=(.*)/s).slice(0, 2) as [string, string]));
const rate = Number(args.get("rate") ?? 500);
const seconds = Number(args.get("seconds") ?? 10);
const lines = Number(args.get("lines") ?? 20_000);
const latencyMs = Number(args.get("latency-ms") ?? 20);
const concurrency = Number(args.get("concurrency") ?? 8);

/** Interactive load at `rate` for `seconds`: each request's latency (ms) and the failures. */
async function interactive(pool: Pool, key: string): Promise<{ latencies: number[]; failures: number }> {
  const body = JSON.stringify({ model: "simulated-chat", messages: [{ role: "user", content: "hello, how are you today?" }], max_tokens: 16 });
  const latencies: number[] = [];
  let failures = 0;
  const total = Math.round(rate * seconds);
  const start = performance.now();
  const sent: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    sent.push(
      (async () => {
        // Latency from the request's scheduled time: a request the generator sends late counts its wait (no coordinated omission).
        try {
          const res = await pool.request({ method: "POST", path: "/openai/v1/chat/completions", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
          await res.body.text();
          if (res.statusCode !== 200) failures += 1;
        } catch {
          failures += 1;
        }
        latencies.push(performance.now() - due);
      })(),
    );
  }
  await Promise.all(sent);
  return { latencies, failures };
}

const troupe = await startEmbeddedTroupe("bench-batch", () => ({ SIMULATED_LATENCY_MS: String(latencyMs), BATCH_CONCURRENCY: String(concurrency) }));
const { base, user } = troupe;
try {
  const pool = new Pool(base, { connections: 64, pipelining: 1 });
  const sdk = new OpenAI({ baseURL: `${base}/openai/v1`, apiKey: user.testKey, maxRetries: 0 });
  console.log(`bench:batch: interactive chat at ${rate} req/s for ${seconds} s, alone then beside a ${lines}-line batch (BATCH_CONCURRENCY ${concurrency}); simulated provider latency ${latencyMs} ms; embedded host`);
  // Warm-up: connections, JIT, the key in cache.
  await interactive(pool, user.testKey).catch(() => undefined);

  const alone = await interactive(pool, user.testKey);
  const text = Array.from({ length: lines }, (_, i) => JSON.stringify({ custom_id: `b-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "simulated-chat", messages: [{ role: "user", content: `batch line ${i}` }], max_tokens: 16 } })).join("\n");
  const file = await sdk.files.create({ file: await toFile(Buffer.from(text), "bench.jsonl"), purpose: "batch" });
  const batch = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  // Until the batch runs at its pace.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const atStart = (await sdk.batches.retrieve(batch.id)).request_counts!.completed;
  const beside = await interactive(pool, user.testKey);
  const after = await sdk.batches.retrieve(batch.id);
  const answered = after.request_counts!.completed - atStart;
  await sdk.batches.cancel(batch.id);

  const a = summarize(alone.latencies);
  const b = summarize(beside.latencies);
  console.log("");
  console.log("phase              requests  failures  p50        p99");
  console.log(`interactive alone  ${String(a.count).padEnd(8)}  ${String(alone.failures).padEnd(8)}  ${fmt(a.p50).padEnd(9)}  ${fmt(a.p99)}`);
  console.log(`beside the batch   ${String(b.count).padEnd(8)}  ${String(beside.failures).padEnd(8)}  ${fmt(b.p50).padEnd(9)}  ${fmt(b.p99)}`);
  console.log("");
  console.log(`p99 ratio (beside / alone): ${(b.p99 / a.p99).toFixed(2)}; batch lines answered during the second phase: ${answered} (${(answered / seconds).toFixed(0)}/s), batch status then ${after.status}`);
  console.log(JSON.stringify({ bench: "batch-interactive", rate, seconds, lines, concurrency, latency_ms: latencyMs, alone: { ...a, failures: alone.failures }, beside: { ...b, failures: beside.failures }, p99_ratio: b.p99 / a.p99, batch_lines_during: answered }));
  await pool.close();
} finally {
  troupe.stop();
}
