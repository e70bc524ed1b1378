// The exact response cache's hit path against a live call, in one run
// (`npm run bench:cache`): one embedded Troupe, its router at the OpenAI
// fake on loopback, a project with the cache on. Sequential requests over
// one keep-alive connection, the three paths taking turns:
//   floor: GET /v1/models with the API key (admission, routing, JSON answer)
//   hit:   POST /v1/chat/completions answered from the cache (~2 KB answer)
//   live:  the same request with `troupe-cache: bypass` (the fake upstream)
// Prints p50/p99 of each and the hit's p50 above the floor.
import { projectWithLiveKey, startFakeOpenAI } from "../test/support/billing.ts";
import { signup, startTestTroupe } from "../test/support/troupe.ts";
import { fmt, summarize } from "../load/stats.ts";

const rounds = Number(process.argv[2] ?? 2000);
const { fake, router } = await startFakeOpenAI();
const troupe = await startTestTroupe({}, { router: router() });
const user = await signup(troupe, "bench-cache");
const project = await projectWithLiveKey(troupe, user.token, user.orgId, "bench");
await troupe.request("PATCH", `/v1/projects/${project.projectId}/cache`, { token: user.token, body: { enabled: true } });

// The fake echoes the last user message: a ~2 KB question gives a ~2 KB answer.
const question = "Tell me about caching. ".repeat(90);
const body = JSON.stringify({ model: "gpt-4.1-mini", messages: [{ role: "user", content: question }] });
const auth = { authorization: `Bearer ${project.liveKey}`, "content-type": "application/json" };
const url = troupe.url;

/** One request's wall time, its answer read to the end. */
async function once(run: () => Promise<Response>): Promise<number> {
  const started = performance.now();
  const res = await run();
  await res.arrayBuffer();
  return performance.now() - started;
}
const floor = () => fetch(`${url}/v1/models`, { headers: auth });
const hit = () => fetch(`${url}/v1/chat/completions`, { method: "POST", headers: auth, body });
const live = () => fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { ...auth, "troupe-cache": "bypass" }, body });

const first = await hit();
const answerBytes = (await first.text()).length;
const check = await hit();
if (check.headers.get("troupe-cache") !== "hit") throw new Error(`expected a hit, got ${check.headers.get("troupe-cache")}`);
await check.arrayBuffer();
// Warm up each path, then measure them taking turns request by request, so the machine's drift (other jobs on a shared host) affects all three alike.
const paths = { floor, hit, live };
for (let i = 0; i < rounds; i++) for (const run of Object.values(paths)) await once(run).catch(() => 0);
const results: Record<string, number[]> = { floor: [], hit: [], live: [] };
for (let i = 0; i < rounds * 3; i++) for (const [name, run] of Object.entries(paths)) results[name]!.push(await once(run));
const s = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, summarize(v)]));
console.log(`answer: ${answerBytes} bytes of JSON; ${rounds * 3} requests per path, sequential`);
for (const [name, r] of Object.entries(s)) console.log(`${name.padEnd(6)} p50 ${fmt(r!.p50, 3)} ms  p99 ${fmt(r!.p99, 3)} ms`);
console.log(`hit above floor: p50 +${fmt(s["hit"]!.p50 - s["floor"]!.p50, 3)} ms; live above hit: p50 +${fmt(s["live"]!.p50 - s["hit"]!.p50, 3)} ms`);
// Paired: each turn's hit minus the floor request just before it (steadier than the difference of two p50s on a busy machine).
const paired = summarize(results["hit"]!.map((ms, i) => ms - (results["floor"]![i] ?? 0)));
console.log(`hit above floor, paired per turn: p50 +${fmt(paired.p50, 3)} ms`);
await troupe.stop();
await fake.close();
