// `node bench/chat.ts`: chat overhead. One run starts a fast fake OpenAI
// upstream (uWS, constant answers), a bare uWS + undici pass-through to it,
// and Troupe (POST /v1/chat/completions, routing manual to gpt-4.1-mini on
// that upstream), each in its own process, then sends the same chat request:
//   1. at a fixed rate (open loop, default 1,000 req/s, bench/loadgen): p50/p99
//      of each and the added latency (Troupe − direct, pass-through − direct).
//      The targets take turns in short rounds (--rounds, rotating the order)
//      so a noisy neighbour on this shared machine hits all of them alike;
//   2. at saturation (wrk, 64 keep-alive connections, in rounds too): req/s of each and
//      Troupe as a share of the pass-through;
//   3. streaming (stream: true): time to first byte, direct vs Troupe, at the
//      fixed rate (at most 1,000 req/s) and at 200 req/s.
// Troupe runs twice, metrics off (the default) and on (METRICS_PORT set:
// one histogram observation per request, provider counters, ledger totals),
// taking turns with the others, so the cost of recording shows side by side.
// Targets (docs/benchmarks.md, P1 and P2): added p50 ≤ 0.25 ms, p99 ≤ 1 ms
// at --rate=5000 (first set at 1,000 req/s, the default rate); at saturation
// ≥ 90 % of the pass-through, and a main thread's CPU per request ≤ 20 µs
// over the pass-through's.
// Budgets: "Troupe" calls with a live key of a project without a
// budget; two more targets call the same Troupe with live keys of a project
// with a budget (alerts only) and of one with a hard limit (never reached),
// so the three overheads print side by side. --redis=URL runs Troupe on
// Redis. A hard-limited call is admitted from the replica's lease of the
// budget (tenancy/budget-leases.ts): a ledger step per lease (about one a
// second), not two per call as before.
//
//   node bench/chat.ts [--rate=1000] [--seconds=5] [--rounds=5] [--warmup=4] [--connections=64] [--pin] [--no-usage] [--usage-off] [--no-journal] [--semi-space=MiB] [--baseline=DIR] [--ledger-here] [--redis=URL]
// (--seconds: per round, at the fixed rate and at saturation; --rounds: rounds of each.)
// (--no-usage: Troupe's chat route without the usage sink, to see its cost.)
// One more Troupe side by side with the default, so a cost shows in one run:
// --usage-off without the usage sink; --no-journal with no usage journal;
// --ledger-here with the embedded ledger on its event loop, not its thread;
// --semi-space=MiB with V8's --max-semi-space-size at that (young-generation GC);
// --baseline=DIR started from another checkout's bench/chat.ts (e.g.
// `git worktree add /tmp/old <commit>`, node_modules linked): that commit.
// "Troupe, /openai/v1" calls the same Troupe through the OpenAI-compatible
// mount (same model and message in OpenAI's body): its added p50 prints beside
// /v1's, target within 5 %; "Troupe, /gemini" the same through the Gemini
// mount (Gemini's generateContent body, the key as x-goog-api-key).
// Child roles run this same file with BENCH_CHAT_ROLE=upstream|passthrough|troupe.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as uWS from "uWebSockets.js";
import { Pool } from "undici";

const role = process.env["BENCH_CHAT_ROLE"];
const chatPath = "/v1/chat/completions";

function listenAndPrint(app: uWS.TemplatedApp): void {
  app.listen("127.0.0.1", 0, (socket) => {
    if (!socket) process.exit(1);
    process.stdout.write(`PORT=${uWS.us_socket_local_port(socket)}\n`);
  });
}

/** Reads a uWS request body (copying each chunk: uWS reuses the buffer). */
function readBody(res: uWS.HttpResponse, onBody: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  res.onData((chunk, isLast) => {
    chunks.push(Buffer.from(chunk.slice(0)));
    if (isLast) onBody(Buffer.concat(chunks));
  });
}

if (role === "upstream") {
  // OpenAI's wire format, constant answers, no work: the upstream must not be the bottleneck.
  const completion = JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion",
    created: 1_700_000_000,
    model: "gpt-4.1-mini",
    choices: [{ index: 0, message: { role: "assistant", content: "Hello! I am fine, thank you." }, finish_reason: "stop" }],
    usage: { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 },
  });
  const chunk = (delta: unknown, finish: string | null) =>
    `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1_700_000_000, model: "gpt-4.1-mini", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const sse =
    chunk({ role: "assistant", content: "" }, null) +
    ["Hello!", " I", " am", " fine."].map((d) => chunk({ content: d }, null)).join("") +
    chunk({}, "stop") +
    `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1_700_000_000, model: "gpt-4.1-mini", choices: [], usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 } })}\n\n` +
    "data: [DONE]\n\n";
  const app = uWS.App();
  app.post(chatPath, (res) => {
    let aborted = false;
    res.onAborted(() => (aborted = true));
    readBody(res, (body) => {
      if (aborted) return;
      const stream = body.includes('"stream":true');
      res.cork(() => {
        res.writeHeader("content-type", stream ? "text/event-stream" : "application/json");
        res.end(stream ? sse : completion);
      });
    });
  });
  listenAndPrint(app);
} else if (role === "passthrough") {
  // The reference: uWS in, undici out, bytes back, nothing else.
  const upstream = new Pool(process.env["BENCH_UPSTREAM"] ?? "", { connections: 128, pipelining: 1, keepAliveTimeout: 30_000 });
  const app = uWS.App();
  app.post(chatPath, (res) => {
    let aborted = false;
    res.onAborted(() => (aborted = true));
    readBody(res, (body) => {
      void (async () => {
        const up = await upstream.request({ method: "POST", path: chatPath, headers: { "content-type": "application/json" }, body });
        let first = true;
        for await (const part of up.body) {
          if (aborted) return;
          res.cork(() => {
            if (first) res.writeStatus(String(up.statusCode)).writeHeader("content-type", String(up.headers["content-type"]));
            first = false;
            res.write(part as Buffer);
          });
        }
        if (!aborted) res.cork(() => res.end());
      })().catch(() => {
        if (!aborted) res.cork(() => res.writeStatus("502").end());
      });
    });
  });
  listenAndPrint(app);
} else if (role === "troupe") {
  const { loadConfig } = await import("../gateway/config.ts");
  const { createLogger } = await import("../core/log.ts");
  const { startTroupe } = await import("../gateway/app.ts");
  const { createRouter } = await import("../providers/index.ts");
  const { noUsage, UsageMeter } = await import("../providers/usage.ts");
  const { chatRoutes } = await import("../gateway/routes/chat.ts");
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    DEFAULT_RATE_LIMIT_PER_MINUTE: "10000000",
    ...(process.env["BENCH_REDIS_URL"] ? { REDIS_URL: process.env["BENCH_REDIS_URL"] } : {}),
    // bench/soak.ts --cluster: a Redis Cluster's primaries.
    ...(process.env["BENCH_REDIS_CLUSTER_NODES"] ? { REDIS_CLUSTER_NODES: process.env["BENCH_REDIS_CLUSTER_NODES"] } : {}),
    // bench/soak.ts keeps per-call ledger records minutes, not days, so a steady state shows within its run.
    ...(process.env["BENCH_RETENTION_SECONDS"] ? { USAGE_RECORD_RETENTION_SECONDS: process.env["BENCH_RETENTION_SECONDS"] } : {}),
    TROUPE_DATA_DIR: mkdtempSync(join(tmpdir(), "troupe-bench-chat-")),
    OPENAI_API_KEY: "sk-bench",
    OPENAI_BASE_URL: `${process.env["BENCH_UPSTREAM"] ?? ""}/v1`,
    ...(process.env["BENCH_METRICS_PORT"] ? { METRICS_PORT: process.env["BENCH_METRICS_PORT"], METRICS_HOST: "127.0.0.1" } : {}),
  });
  const log = createLogger("warn");
  // Use the app's own chat route (and its usage sink) when it is wired;
  // otherwise, or with --no-usage (diagnostic), serve it here without usage recording.
  const noUsageRoute = {
    extraRoutes: () => {
      const router = createRouter(config.providers);
      return chatRoutes({ router, usage: new UsageMeter(router.catalogue, noUsage) });
    },
  };
  // --ledger-here: the embedded ledger on the gateway's event loop (as before it had its own thread).
  const ledgerHere = process.env["BENCH_LEDGER_HERE"] === "1" ? { ledger: new (await import("../tenancy/embedded-ledger-store.ts")).EmbeddedLedgerStore(config.dataDir) } : {};
  const noJournal = process.env["BENCH_NO_JOURNAL"] === "1" ? { usageJournal: false } : {};
  let troupe = await startTroupe(config, log, process.env["BENCH_NO_USAGE"] === "1" ? noUsageRoute : { ...ledgerHere, ...noJournal });
  const probe = await fetch(`http://127.0.0.1:${troupe.port}${chatPath}`, { method: "POST" });
  if (probe.status === 404) {
    await troupe.stop();
    troupe = await startTroupe(config, log, noUsageRoute);
  }
  process.stdout.write(`PORT=${troupe.port}\n`);
} else {
  await orchestrate();
}

async function orchestrate(): Promise<void> {
  const { startChildServer } = await import("./lib/child-server.ts");
  const { fixedRate } = await import("./lib/loadgen.ts");
  const { inRotatingRounds } = await import("./lib/rotating-rounds.ts");
  const { fmt, summarize } = await import("../load/stats.ts");
  const { requireWrk, wrk } = await import("./lib/wrk.ts");
  type RequestSpec = import("./lib/loadgen.ts").RequestSpec;

  const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
  const rate = Number(args.get("rate") ?? 1000);
  const seconds = Number(args.get("seconds") ?? 5);
  const rounds = Number(args.get("rounds") ?? 5);
  const connections = Number(args.get("connections") ?? 64);
  // Seconds of wrk per target before measuring (then half that at the fixed rate): a short run on a busy machine may take 1.
  const warmup = Number(args.get("warmup") ?? 4);
  requireWrk();
  const { configurePinning, describeLayout } = await import("./lib/cpu-layout.ts");
  configurePinning(args.has("pin"));
  console.log(`CPU layout: ${describeLayout()}`);
  const self = import.meta.filename;

  const children: import("./lib/child-server.ts").ChildServer[] = [];
  const start = async (env: Record<string, string>, cpu: import("./lib/cpu-layout.ts").CpuRole = "server") => {
    const child = await startChildServer(self, env, cpu);
    children.push(child);
    return child;
  };
  try {
    const upstream = await start({ BENCH_CHAT_ROLE: "upstream" }, "world");
    const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
    const passthrough = await start({ BENCH_CHAT_ROLE: "passthrough", BENCH_UPSTREAM: upstreamUrl });
    const troupeEnv = {
      BENCH_CHAT_ROLE: "troupe",
      BENCH_UPSTREAM: upstreamUrl,
      BENCH_NO_USAGE: args.has("no-usage") ? "1" : "0",
      BENCH_REDIS_URL: args.get("redis") ?? "",
    };
    const troupe = await start(troupeEnv);
    const { freePort } = await import("../test/support/net.ts");
    const metricsPort = await freePort();
    const troupeMetrics = await start({ ...troupeEnv, BENCH_METRICS_PORT: String(metricsPort) });
    const { liveKeyFor } = await import("./lib/bench-account.ts");
    const account = await liveKeyFor(`http://127.0.0.1:${troupe.port}`);
    const key = await account.project(undefined);
    // A budget far above what the run spends: the cost measured is the check, never a 402.
    const budgetKey = await account.project({ monthly_limit_usd: 1_000_000, hard_limit: false });
    const hardKey = await account.project({ monthly_limit_usd: 1_000_000, hard_limit: true });
    // The metrics-on Troupe has its own data dir: its own account, the same request otherwise.
    const metricsKey = await (await liveKeyFor(`http://127.0.0.1:${troupeMetrics.port}`)).project(undefined);
    const troupeLedgerHere = args.has("ledger-here") ? await start({ ...troupeEnv, BENCH_LEDGER_HERE: "1" }) : undefined;
    const ledgerHereKey = troupeLedgerHere ? await (await liveKeyFor(`http://127.0.0.1:${troupeLedgerHere.port}`)).project(undefined) : "";
    const troupeUsageOff = args.has("usage-off") ? await start({ ...troupeEnv, BENCH_NO_USAGE: "1" }) : undefined;
    const usageOffKey = troupeUsageOff ? await (await liveKeyFor(`http://127.0.0.1:${troupeUsageOff.port}`)).project(undefined) : "";
    const troupeNoJournal = args.has("no-journal") ? await start({ ...troupeEnv, BENCH_NO_JOURNAL: "1" }) : undefined;
    const noJournalKey = troupeNoJournal ? await (await liveKeyFor(`http://127.0.0.1:${troupeNoJournal.port}`)).project(undefined) : "";
    // --semi-space=MiB: one more Troupe whose V8 young generation may grow to that size (fewer scavenges).
    const semiSpace = args.get("semi-space");
    if (semiSpace !== undefined && !(Number.isInteger(Number(semiSpace)) && Number(semiSpace) > 0)) throw new Error(`--semi-space must be a whole number of MiB, got ${semiSpace}`);
    const troupeSemiSpace = semiSpace ? await start({ ...troupeEnv, NODE_OPTIONS: `${process.env["NODE_OPTIONS"] ?? ""} --max-semi-space-size=${Number(semiSpace)}` }) : undefined;
    const semiSpaceKey = troupeSemiSpace ? await (await liveKeyFor(`http://127.0.0.1:${troupeSemiSpace.port}`)).project(undefined) : "";

    const baselineDir = args.get("baseline");
    const troupeBaseline = baselineDir ? await startChildServer(join(baselineDir, "bench", "chat.ts"), troupeEnv) : undefined;
    if (troupeBaseline) children.push(troupeBaseline);
    const baselineKey = troupeBaseline ? await (await liveKeyFor(`http://127.0.0.1:${troupeBaseline.port}`)).project(undefined) : "";

    const chatBody = (stream: boolean) =>
      JSON.stringify({ model: "gpt-4.1-mini", routing_strategy: "manual", stream, messages: [{ role: "user", content: "Hello there, how are you today?" }] });
    const spec = (stream: boolean, auth: boolean, bearer = key): RequestSpec => ({
      method: "POST",
      path: chatPath,
      headers: { "content-type": "application/json", ...(auth ? { authorization: `Bearer ${bearer}` } : {}) },
      body: chatBody(stream),
    });
    // The OpenAI-compatible mount on the same Troupe, the same model and message
    // in OpenAI's own body (no routing_strategy: a catalogue id is manual there).
    const openAiSpec = (bearer: string): RequestSpec => ({
      method: "POST",
      path: "/openai/v1/chat/completions",
      headers: { "content-type": "application/json", authorization: `Bearer ${bearer}` },
      body: JSON.stringify({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "Hello there, how are you today?" }] }),
    });
    // The Gemini mount on the same Troupe: the same model and message in Gemini's body, the key as Google's SDKs send it.
    const geminiSpec = (apiKey: string): RequestSpec => ({
      method: "POST",
      path: "/gemini/v1/models/gpt-4.1-mini:generateContent",
      headers: { "content-type": "application/json", "x-goog-api-key": apiKey },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hello there, how are you today?" }] }] }),
    });
    const targets = [
      { name: "direct (fake upstream)", port: upstream.port, spec: spec(false, false) },
      { name: "bare uWS + undici pass-through", port: passthrough.port, spec: spec(false, false) },
      { name: "Troupe", port: troupe.port, spec: spec(false, true) },
      { name: "Troupe + metrics", port: troupeMetrics.port, spec: spec(false, true, metricsKey) },
      { name: "Troupe, budget (alerts only)", port: troupe.port, spec: spec(false, true, budgetKey) },
      { name: "Troupe, hard limit", port: troupe.port, spec: spec(false, true, hardKey) },
      { name: "Troupe, /openai/v1", port: troupe.port, spec: openAiSpec(key) },
      { name: "Troupe, /gemini", port: troupe.port, spec: geminiSpec(key) },
      ...(troupeLedgerHere ? [{ name: "Troupe, ledger on event loop", port: troupeLedgerHere.port, spec: spec(false, true, ledgerHereKey) }] : []),
      ...(troupeUsageOff ? [{ name: "Troupe, usage off", port: troupeUsageOff.port, spec: spec(false, true, usageOffKey) }] : []),
      ...(troupeNoJournal ? [{ name: "Troupe, no usage journal", port: troupeNoJournal.port, spec: spec(false, true, noJournalKey) }] : []),
      ...(troupeSemiSpace ? [{ name: `Troupe, semi-space ${semiSpace} MiB`, port: troupeSemiSpace.port, spec: spec(false, true, semiSpaceKey) }] : []),
      ...(troupeBaseline ? [{ name: "Troupe, baseline", port: troupeBaseline.port, spec: spec(false, true, baselineKey) }] : []),
    ];
    // Sanity: Troupe really answers through the upstream.
    const check = await fetch(`http://127.0.0.1:${troupe.port}${chatPath}`, { method: "POST", headers: targets[2]!.spec.headers, body: targets[2]!.spec.body! });
    const checkText = await check.text();
    if (check.status !== 200 || !checkText.includes('"provider":"openai"')) throw new Error(`Troupe answered ${check.status}: ${checkText}`);

    // Warm up (JIT of the whole request path, connections, key cache): a few
    // seconds of wrk, then the fixed rate itself, unmeasured.
    for (const t of targets) wrk(`http://127.0.0.1:${t.port}${t.spec.path}`, t.spec, 16, warmup);
    for (const t of targets) fixedRate(`http://127.0.0.1:${t.port}`, t.spec, rate, warmup * 500);

    console.log(`\nfixed rate: ${rate} req/s, ${rounds} rounds of ${seconds} s per target (open loop, latency from scheduled start)`);
    const latencies = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    const errors = new Map<string, number>(targets.map((t) => [t.name, 0]));
    // The metrics-on Troupe's own runtime in its rounds (GC pauses, event-loop delay): what its tail is made of.
    const { describeWindows, scrapeRuntime, scrapeText, windowBetween } = await import("./lib/runtime-window.ts");
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    const runtimeWindows: import("./lib/runtime-window.ts").RuntimeWindow[] = [];
    // Whether the machine had a CPU free for the server in its rounds: the
    // share of both CPUs busy, and how long the server's main thread waited
    // on a run queue (ready to run, no CPU free). Latency from that wait is
    // the machine's, not the server's code: the pass-through shows it too.
    const { machineCpuTicks, threadSchedMs } = await import("./lib/proc-stats.ts");
    const pidOf = new Map(children.map((c) => [c.port, c.process.pid]));
    const contention = new Map(targets.map((t) => [t.name, { ranMs: 0, waitedMs: 0, busy: 0, total: 0 }]));
    await inRotatingRounds(targets, rounds, async (t) => {
      const before = t.port === troupeMetrics.port ? await scrapeRuntime(metricsUrl) : undefined;
      const [schedBefore, ticksBefore] = [await threadSchedMs(pidOf.get(t.port)), await machineCpuTicks()];
      const r = fixedRate(`http://127.0.0.1:${t.port}`, t.spec, rate, seconds * 1000);
      const [schedAfter, ticksAfter] = [await threadSchedMs(pidOf.get(t.port)), await machineCpuTicks()];
      const c = contention.get(t.name)!;
      c.ranMs += schedAfter.main.ranMs - schedBefore.main.ranMs;
      c.waitedMs += schedAfter.main.waitedMs - schedBefore.main.waitedMs;
      c.busy += ticksAfter.busy - ticksBefore.busy;
      c.total += ticksAfter.total - ticksBefore.total;
      // The window holds the load generator's 1 s warm-up too (the same rate, unrecorded).
      if (before) runtimeWindows.push(windowBetween(before, await scrapeRuntime(metricsUrl), seconds + 1));
      latencies.get(t.name)!.push(...r.latenciesMs);
      errors.set(t.name, errors.get(t.name)! + r.errors);
    });
    const fixed: Record<string, { p50: number; p99: number }> = {};
    for (const t of targets) {
      const s = summarize(latencies.get(t.name)!);
      fixed[t.name] = s;
      const c = contention.get(t.name)!;
      // Each round is the load generator's 1 s warm-up and `seconds` measured.
      const window = rounds * (seconds + 1);
      console.log(
        `  ${t.name.padEnd(32)} ${String(s.count).padStart(6)} requests  p50 ${fmt(s.p50, 3)} ms  p99 ${fmt(s.p99, 3)} ms  errors ${errors.get(t.name)}  ` +
          `(main thread ran ${fmt(c.ranMs / window, 0)} ms/s, waited for a CPU ${fmt(c.waitedMs / window, 0)} ms/s; machine ${fmt((100 * c.busy) / c.total, 0)} % busy)`,
      );
    }
    const direct = fixed[targets[0]!.name]!;
    for (const t of targets.slice(1)) {
      const s = fixed[t.name]!;
      console.log(`  added by ${t.name.padEnd(32)} p50 ${fmt(s.p50 - direct.p50, 3)} ms  p99 ${fmt(s.p99 - direct.p99, 3)} ms`);
    }

    console.log(`  Troupe + metrics, its runtime in its rounds: ${describeWindows(runtimeWindows)}`);

    // Scraped right after the load: what the metrics-on Troupe recorded.
    const scraped = await scrapeText(metricsUrl);
    const sumOf = (pattern: RegExp) => scraped.split("\n").filter((l) => pattern.test(l)).reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
    const nonZero = [...new Set(scraped.split("\n").filter((l) => /^troupe_/.test(l) && Number(l.split(" ").pop()) > 0).map((l) => l.replace(/[{ ].*/, "").replace(/_(bucket|sum|count)$/, "")))];
    console.log(
      `  /metrics after the load: ${sumOf(/^troupe_http_request_duration_seconds_count\{.*route="\/v1\/chat\/completions".*status="200"/)} chat 200s, ` +
        `${sumOf(/^troupe_provider_calls_total\{.*outcome="success"/)} successful provider calls, ${sumOf(/^troupe_ledger_records_total/)} ledger records; ` +
        `non-zero troupe_ families: ${nonZero.join(", ")}`,
    );

    console.log(`\nsaturation: wrk, ${connections} keep-alive connections, ${rounds} rounds of ${seconds} s per target (rotating order; the median round)`);
    // Troupe's own CPU per request at saturation, its main thread apart from
    // its other threads (the ledger's, lmdb's, GC): the upstream and wrk are
    // other processes, so this is Troupe's cost alone (the saturation
    // target's ≤ 20 µs a call over the pass-through's main thread).
    // Rounds as at the fixed rate: one target's window on this shared machine
    // swings by 15-25 % (a neighbour, the ledger's flush of the previous
    // target's calls), so each target's figure is its median round.
    const { threadCpuMs } = await import("./lib/proc-stats.ts");
    const runs = new Map<string, { rps: number; p50Ms: number; p99Ms: number; non2xx: number; mainUs: number; othersUs: number }[]>(targets.map((t) => [t.name, []]));
    await inRotatingRounds(targets, rounds, async (t) => {
      const pid = t.port === upstream.port ? undefined : pidOf.get(t.port);
      const before = await threadCpuMs(pid);
      const r = wrk(`http://127.0.0.1:${t.port}${t.spec.path}`, t.spec, connections, seconds);
      await new Promise((resolve) => setTimeout(resolve, 300)); // the ledger's last flush of the run
      const after = await threadCpuMs(pid);
      const perRequestUs = (ms: number) => (ms * 1000) / (r.rps * seconds);
      runs.get(t.name)!.push({ ...r, mainUs: perRequestUs(after.main - before.main), othersUs: perRequestUs(after.others - before.others) });
    });
    const sat: Record<string, number> = {};
    const mainUs: Record<string, number> = {};
    for (const t of targets) {
      const all = runs.get(t.name)!;
      const r = [...all].sort((a, b) => a.rps - b.rps)[Math.floor(all.length / 2)]!;
      const cpu = Number.isNaN(r.mainUs) ? "" : `  cpu/request main ${fmt(r.mainUs, 1)} µs, other threads ${fmt(r.othersUs, 1)} µs`;
      sat[t.name] = r.rps;
      mainUs[t.name] = r.mainUs;
      console.log(
        `  ${t.name.padEnd(32)} ${fmt(r.rps, 0).padStart(7)} req/s  p50 ${fmt(r.p50Ms, 3)} ms  p99 ${fmt(r.p99Ms, 3)} ms  non-2xx ${all.reduce((n, x) => n + x.non2xx, 0)}${cpu}  (rounds: ${all.map((x) => fmt(x.rps, 0)).join(", ")})`,
      );
    }
    const share = sat["Troupe"]! / sat[targets[1]!.name]!;
    console.log(`  Troupe / pass-through: ${fmt(share * 100, 1)} % (target ≥ 90 %)`);
    // Both pay the same syscalls (the answer, the upstream request): the difference is Troupe's own work.
    console.log(`  Troupe's main-thread CPU per request over the pass-through's: ${fmt(mainUs["Troupe"]! - mainUs[targets[1]!.name]!, 1)} µs (target ≤ 20 µs)`);
    const off = fixed["Troupe"]!;
    const on = fixed["Troupe + metrics"]!;
    console.log(
      `\nmetrics on vs off: p50 ${fmt(on.p50 - off.p50, 3)} ms, p99 ${fmt(on.p99 - off.p99, 3)} ms at ${rate} req/s; saturation ${fmt((sat["Troupe + metrics"]! / sat["Troupe"]!) * 100, 1)} % of metrics off`,
    );

    // Streams at the fixed-rate phase's rate (at most 1,000 a second), the
    // rate the other added latencies are measured at, and at 200 a second,
    // where every request meets a colder machine (cores idle between
    // requests, caches cold) and pays its wake-ups: both print, rounds
    // rotating as above. The plain calls' added p50 at the same rate shows
    // what a stream's first byte costs beyond a whole answer.
    const streamTargets = [
      { name: "direct", port: upstream.port, spec: spec(true, false) },
      { name: "Troupe", port: troupe.port, spec: spec(true, true) },
    ];
    for (const streamRate of [...new Set([Math.min(rate, 1000), 200])]) {
      console.log(`\nstreaming: time to first byte, ${streamRate} req/s, ${rounds} rounds of ${seconds} s per target`);
      const ttfb = new Map<string, number[]>(streamTargets.map((t) => [t.name, []]));
      await inRotatingRounds(streamTargets, rounds, (t) => {
        ttfb.get(t.name)!.push(...fixedRate(`http://127.0.0.1:${t.port}`, t.spec, streamRate, seconds * 1000, { firstByte: true }).latenciesMs);
      });
      for (const t of streamTargets) {
        const s = summarize(ttfb.get(t.name)!);
        console.log(`  ${t.name.padEnd(32)} TTFB p50 ${fmt(s.p50, 3)} ms  p99 ${fmt(s.p99, 3)} ms  (${s.count} streams)`);
      }
      const d = summarize(ttfb.get("direct")!);
      const tr = summarize(ttfb.get("Troupe")!);
      const plainAdded = streamRate === rate ? `; plain calls at this rate: p50 ${fmt(fixed["Troupe"]!.p50 - direct.p50, 3)} ms` : "";
      console.log(`  added TTFB by Troupe: p50 ${fmt(tr.p50 - d.p50, 3)} ms  p99 ${fmt(tr.p99 - d.p99, 3)} ms (target p50 ≤ 0.25 ms)${plainAdded}`);
    }
    const { measureRecordingCost } = await import("./lib/metrics-cost.ts");
    const cost = measureRecordingCost();
    console.log(`\nmetrics recording per chat request, in process (route histogram + provider counter/histogram + ledger): ${fmt(cost.nsPerRequest, 0)} ns`);
    const { measureLedgerCost } = await import("./lib/ledger-cost.ts");
    const ledgerCost = await measureLedgerCost();
    console.log("ledger flush of 200 chat records (embedded, Billing.write), in process, what the caller's event loop spends:");
    for (const [name, cost] of [["on its own thread (default)", ledgerCost.threaded], ["on the event loop (before)", ledgerCost.here]] as const) {
      console.log(
        `  ${name.padEnd(28)} append steps median ${fmt(cost.medianStepMs, 3)} ms, longest ${fmt(cost.longestStepMs, 3)} ms, event loop busy ${fmt(cost.busyUsPerRecord, 1)} µs per record`,
      );
    }
    const compat = fixed["Troupe, /openai/v1"]!;
    const nativeAdded = fixed["Troupe"]!.p50 - direct.p50;
    const compatAdded = compat.p50 - direct.p50;
    console.log(
      `\n/openai/v1 vs /v1 (same Troupe, same run): added p50 ${fmt(compatAdded, 3)} vs ${fmt(nativeAdded, 3)} ms ` +
        `(${fmt(((compatAdded - nativeAdded) / nativeAdded) * 100, 1)} %, target within 5 %); saturation ${fmt((sat["Troupe, /openai/v1"]! / sat["Troupe"]!) * 100, 1)} % of /v1`,
    );
    const gemini = fixed["Troupe, /gemini"]!;
    const geminiAdded = gemini.p50 - direct.p50;
    console.log(
      `/gemini vs /v1 (same Troupe, same run): added p50 ${fmt(geminiAdded, 3)} vs ${fmt(nativeAdded, 3)} ms ` +
        `(${fmt(((geminiAdded - nativeAdded) / nativeAdded) * 100, 1)} %, target within 5 %); saturation ${fmt((sat["Troupe, /gemini"]! / sat["Troupe"]!) * 100, 1)} % of /v1`,
    );
    const troupeFixed = fixed["Troupe"]!;
    console.log(
      `\ntargets: added p50 ≤ 0.25 ms (${fmt(troupeFixed.p50 - direct.p50, 3)}), added p99 ≤ 1 ms (${fmt(troupeFixed.p99 - direct.p99, 3)}), ≥ 90 % of pass-through (${fmt(share * 100, 1)} %)`,
    );
    // The usage targets, each a ratio of two targets of this run: a hard
    // limit adds ≤ 0.1 ms p50 and keeps ≥ 90 % of the default's saturation.
    const hard = fixed["Troupe, hard limit"]!;
    console.log(
      `usage targets: hard limit vs default added p50 ${fmt(hard.p50 - troupeFixed.p50, 3)} ms (target ≤ 0.1), saturation ${fmt((sat["Troupe, hard limit"]! / sat["Troupe"]!) * 100, 1)} % of the default (target ≥ 90 %)`,
    );
    for (const [name, label] of [["Troupe, usage off", "usage off"], ["Troupe, no usage journal", "no usage journal"], ["Troupe, baseline", `the baseline (${baselineDir})`]] as const) {
      const other = fixed[name];
      if (!other) continue;
      console.log(`  default vs ${label}: added p50 ${fmt(troupeFixed.p50 - other.p50, 3)} ms, saturation ${fmt((sat["Troupe"]! / sat[name]!) * 100, 1)} % of ${label}`);
    }
  } catch (error) {
    console.error(error);
    process.exitCode = 1;
  } finally {
    // Children hold pipes open: stop them all, whatever happened.
    for (const c of children) c.stop();
  }
}
