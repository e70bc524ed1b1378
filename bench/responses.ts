// The Responses API's costs (`npm run bench:responses`), in one run: one
// embedded Troupe in its own process (so its CPU is its own, read from
// /proc), its router at the OpenAI fake on loopback.
//   chain: a 200-turn `previous_response_id` chain, one short question per
//          turn; Troupe CPU per turn and the bytes the turn stored (its
//          response object and its input items, as retrieve and
//          input_items answer them: what its ResponseActor holds), each the
//          mean of the 10 turns ending at turns 10, 100 and 200, beside the
//          upstream request's size (the history sent, which must grow).
//   first delta: with the fake's first token delayed by a fixed time, a
//          streamed response's first `response.output_text.delta` against
//          the same model's first chunk straight from the fake: the added
//          time (p50).
//   answer: a non-streamed /openai/v1/responses call against the same
//          /openai/v1/chat/completions call: p50 of each and their ratio.
// Arguments: rounds of each latency path (default 200).
import { startOpenAIFake } from "../test/fakes/openai-fake.ts";
import { projectWithLiveKey } from "../test/support/billing.ts";
import { gatewayProcess, killAndWait } from "../test/support/gateway-process.ts";
import { request, signup } from "../test/support/troupe.ts";
import { fmt, summarize } from "../load/stats.ts";
import { cpuSeconds } from "./lib/proc-stats.ts";

const rounds = Number(process.argv[2] ?? 200);
const turns = 200;
/** The fake's fixed delay before its first token (ms). */
const firstTokenMs = 20;
const model = "gpt-4.1-mini";

const openai = await startOpenAIFake({ apiKey: "sk-fake" });
const { base, start } = await gatewayProcess("troupe-bench-responses-", {
  OPENAI_API_KEY: "sk-fake",
  OPENAI_BASE_URL: `${openai.url}/v1`,
  OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost",
});
const child = await start();
const r = { request: (m: string, p: string, o?: Parameters<typeof request>[3]) => request(base, m, p, o) };
const user = await signup(r, "bench-responses");
const project = await projectWithLiveKey(r, user.token, user.orgId, "bench");
const headers = { authorization: `Bearer ${project.liveKey}`, "content-type": "application/json" };

async function post(path: string, body: unknown): Promise<Response> {
  const res = await fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res;
}
async function bytesOf(path: string): Promise<number> {
  const res = await fetch(`${base}${path}`, { headers });
  if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
  return Buffer.byteLength(await res.text());
}

// The chain.
const marks = new Set([10, 100, 200]);
let previous: string | null = null;
let windowCpu = await cpuSeconds(child.pid);
let windowStored = 0;
console.log(`chain: ${turns} turns, one short question each (means of the 10 turns ending at each mark)`);
for (let turn = 1; turn <= turns; turn++) {
  const res = await post("/openai/v1/responses", { model, input: `Question ${turn}: what comes next in the story?`, ...(previous ? { previous_response_id: previous } : {}) });
  const id = ((await res.json()) as { id: string }).id;
  previous = id;
  // The reads that measure the stored bytes cost Troupe CPU too: left out of the turn's CPU.
  const cpuBeforeReads = await cpuSeconds(child.pid);
  windowStored += (await bytesOf(`/openai/v1/responses/${id}`)) + (await bytesOf(`/openai/v1/responses/${id}/input_items?limit=100`));
  const cpuAfterReads = await cpuSeconds(child.pid);
  windowCpu += cpuAfterReads - cpuBeforeReads;
  if (turn % 10 === 0) {
    const cpu = (await cpuSeconds(child.pid)) - windowCpu;
    if (marks.has(turn)) {
      const upstream = Buffer.byteLength(JSON.stringify(openai.requests.at(-1) ?? null));
      console.log(`  turn ${String(turn).padStart(3)}: troupe cpu/turn ${fmt((cpu * 1e6) / 10, 0)} µs  stored/turn ${fmt(windowStored / 10, 0)} bytes  upstream request ${upstream} bytes`);
    }
    windowCpu = await cpuSeconds(child.pid);
    windowStored = 0;
  }
}

// Latency paths: the fake's first token waits firstTokenMs.
openai.faults.delayMs = firstTokenMs;
const ask = "Say something short about lighthouses.";

/** Milliseconds until the first SSE data line that `matches`. */
async function firstEvent(url: string, init: RequestInit, matches: (line: string) => boolean): Promise<number> {
  const started = performance.now();
  const res = await fetch(url, init);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let at = NaN;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (Number.isNaN(at) && text.split("\n").some((l) => l.startsWith("data:") && matches(l))) at = performance.now() - started;
  }
  return at;
}
const direct = () =>
  firstEvent(`${openai.url}/v1/chat/completions`, { method: "POST", headers: { authorization: "Bearer sk-fake", "content-type": "application/json" }, body: JSON.stringify({ model, stream: true, messages: [{ role: "user", content: ask }] }) }, (l) => l.includes('"content":"'));
const viaResponses = () => firstEvent(`${base}/openai/v1/responses`, { method: "POST", headers, body: JSON.stringify({ model, stream: true, input: ask }) }, (l) => l.includes('"response.output_text.delta"'));
const timed = async (run: () => Promise<unknown>) => {
  const started = performance.now();
  await run();
  return performance.now() - started;
};
const responsesCall = () => timed(async () => (await post("/openai/v1/responses", { model, input: ask, store: false })).arrayBuffer());
const chatCall = () => timed(async () => (await post("/openai/v1/chat/completions", { model, messages: [{ role: "user", content: ask }] })).arrayBuffer());

const paths = { direct, viaResponses, responsesCall, chatCall };
const results: Record<keyof typeof paths, number[]> = { direct: [], viaResponses: [], responsesCall: [], chatCall: [] };
for (const run of Object.values(paths)) for (let i = 0; i < 20; i++) await run();
// Interleaved, one of each per round: drift on a busy machine touches all alike.
for (let i = 0; i < rounds; i++) for (const [name, run] of Object.entries(paths)) results[name as keyof typeof paths].push(await run());
const s = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, summarize(v)])) as Record<keyof typeof paths, ReturnType<typeof summarize>>;
console.log(`latency: ${rounds} rounds, interleaved; the fake's first token after ${firstTokenMs} ms`);
console.log(`  first token straight from the fake   p50 ${fmt(s.direct.p50, 2)} ms  p99 ${fmt(s.direct.p99, 2)} ms`);
console.log(`  first output_text.delta via Troupe   p50 ${fmt(s.viaResponses.p50, 2)} ms  p99 ${fmt(s.viaResponses.p99, 2)} ms  (added p50 +${fmt(s.viaResponses.p50 - s.direct.p50, 2)} ms)`);
console.log(`  non-streamed /openai/v1/responses    p50 ${fmt(s.responsesCall.p50, 2)} ms  p99 ${fmt(s.responsesCall.p99, 2)} ms`);
console.log(`  non-streamed /openai/v1/chat/...     p50 ${fmt(s.chatCall.p50, 2)} ms  p99 ${fmt(s.chatCall.p99, 2)} ms  (responses/chat p50 ${fmt(s.responsesCall.p50 / s.chatCall.p50, 3)})`);
await killAndWait(child, "SIGTERM");
await openai.close();
