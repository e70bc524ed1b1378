// `npm run bench:batch`: does a running batch slow interactive chat down?
// One Troupe (embedded host, child process, simulated provider) takes
// interactive POST /openai/v1/chat/completions at a fixed rate (open loop:
// each request is sent at its time whatever the others do). Phases of
// --seconds take turns --rounds times: alone, then beside a large batch
// (a new one each round, cancelled at the phase's end), so the machine's
// drift (other jobs on a shared host) falls on both alike. It prints the
// interactive p50/p99 of each phase and of all the alone and all the beside
// requests pooled, their ratio, and the batch lines answered meanwhile.
//
// Flags: --rate=500 (interactive requests/s) --seconds=5 (a phase) --rounds=3
//        --lines=20000 --latency-ms=20 (simulated provider latency) --concurrency=8 (BATCH_CONCURRENCY)
import { readdirSync, readFileSync } from "node:fs";
import OpenAI, { toFile } from "openai";
import { Pool } from "undici";
import { startEmbeddedTroupe } from "./lib/embedded-troupe.ts";
import { fmt, summarize } from "../load/stats.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split(/=(.*)/s).slice(0, 2) as [string, string]));
const rate = Number(args.get("rate") ?? 500);
const seconds = Number(args.get("seconds") ?? 5);
const rounds = Number(args.get("rounds") ?? 3);
const lines = Number(args.get("lines") ?? 20_000);
const latencyMs = Number(args.get("latency-ms") ?? 20);
const concurrency = Number(args.get("concurrency") ?? 8);

/**
 * CPU time (ms, all threads) of this bench's child process, the Troupe, from
 * /proc: what the batch takes from the machine, which a loaded host's
 * latency tail hides (the p99s of one phase swing by several times there).
 */
function troupeCpuMs(): number {
  const ticksPerMs = 100 / 1000; // USER_HZ
  for (const pid of readdirSync("/proc").filter((d) => /^[0-9]+$/.test(d))) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "").split(" ");
      // After the command: state, ppid, …; utime and stime are the 14th and 15th fields of the whole line.
      if (Number(fields[1]) === process.pid) return (Number(fields[11]) + Number(fields[12])) / ticksPerMs;
    } catch {
      // A process that ended while we looked.
    }
  }
  return NaN;
}

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
  console.log(`bench:batch: interactive chat at ${rate} req/s, ${rounds} rounds of ${seconds} s alone then ${seconds} s beside a ${lines}-line batch (BATCH_CONCURRENCY ${concurrency}); simulated provider latency ${latencyMs} ms; embedded host`);
  // Warm-up: connections, JIT, the key in cache.
  await interactive(pool, user.testKey).catch(() => undefined);
  const text = Array.from({ length: lines }, (_, i) => JSON.stringify({ custom_id: `b-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "simulated-chat", messages: [{ role: "user", content: `batch line ${i}` }], max_tokens: 16 } })).join("\n");
  const file = await sdk.files.create({ file: await toFile(Buffer.from(text), "bench.jsonl"), purpose: "batch" });

  const cpu = { alone: 0, beside: 0 };
  const alone: number[] = [];
  const beside: number[] = [];
  const failures = { alone: 0, beside: 0 };
  let answered = 0;
  console.log("");
  console.log("round  phase              requests  failures  p50        p99");
  const row = (round: number, phase: string, r: { latencies: number[]; failures: number }) => {
    const s = summarize(r.latencies);
    console.log(`${String(round).padEnd(5)}  ${phase.padEnd(17)}  ${String(s.count).padEnd(8)}  ${String(r.failures).padEnd(8)}  ${fmt(s.p50).padEnd(9)}  ${fmt(s.p99)}`);
  };
  for (let round = 1; round <= rounds; round++) {
    let cpuFrom = troupeCpuMs();
    const a = await interactive(pool, user.testKey);
    cpu.alone += troupeCpuMs() - cpuFrom;
    row(round, "interactive alone", a);
    alone.push(...a.latencies);
    failures.alone += a.failures;
    const batch = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    // Until the batch runs at its pace.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const atStart = (await sdk.batches.retrieve(batch.id)).request_counts!.completed;
    cpuFrom = troupeCpuMs();
    const b = await interactive(pool, user.testKey);
    cpu.beside += troupeCpuMs() - cpuFrom;
    const after = await sdk.batches.retrieve(batch.id);
    answered += after.request_counts!.completed - atStart;
    await sdk.batches.cancel(batch.id);
    row(round, "beside the batch", b);
    beside.push(...b.latencies);
    failures.beside += b.failures;
    // The cancelled batch writes its output file: not inside the next alone phase.
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }

  const a = summarize(alone);
  const b = summarize(beside);
  console.log("");
  console.log("all rounds         requests  failures  p50        p99");
  console.log(`interactive alone  ${String(a.count).padEnd(8)}  ${String(failures.alone).padEnd(8)}  ${fmt(a.p50).padEnd(9)}  ${fmt(a.p99)}`);
  console.log(`beside the batch   ${String(b.count).padEnd(8)}  ${String(failures.beside).padEnd(8)}  ${fmt(b.p50).padEnd(9)}  ${fmt(b.p99)}`);
  console.log("");
  console.log(`p99 ratio (beside / alone): ${(b.p99 / a.p99).toFixed(2)}; batch lines answered during the beside phases: ${answered} (${(answered / (seconds * rounds)).toFixed(0)}/s)`);
  const perSecond = (ms: number) => ms / (seconds * rounds);
  console.log(`Troupe CPU (all threads): alone ${perSecond(cpu.alone).toFixed(0)} ms/s, beside the batch ${perSecond(cpu.beside).toFixed(0)} ms/s; the batch's: ${((cpu.beside - cpu.alone) / Math.max(1, answered)).toFixed(2)} ms a line`);
  console.log(JSON.stringify({ bench: "batch-interactive", cpu_ms: cpu, rate, seconds, rounds, lines, concurrency, latency_ms: latencyMs, alone: { ...a, failures: failures.alone }, beside: { ...b, failures: failures.beside }, p99_ratio: b.p99 / a.p99, batch_lines_during: answered }));
  await pool.close();
} finally {
  troupe.stop();
}
