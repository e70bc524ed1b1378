// The exact response cache's hit path against a live call, in one run
// (`npm run bench:cache`): one embedded Troupe, its router at the OpenAI
// fake on loopback, a project with the cache on. Sequential requests over
// one keep-alive connection, the three paths taking turns:
//   floor: GET /v1/models with the API key (admission, routing, JSON answer)
//   hit:   POST /v1/chat/completions answered from the cache (~2 KB answer)
//   live:  the same request with `troupe-cache: bypass` (the fake upstream)
// The client is a raw keep-alive socket sending prebuilt bytes
// (bench/lib/raw-http.ts), so the figures are the gateway's and not a fetch
// client's per-request work (Request, body stream, Headers: ~0.1 ms more for
// a POST with a 2 KB body than for a GET, inside the same process).
// Prints p50/p99 of each and the hit's p50 above the floor.
import { RawHttpConnection } from "./lib/raw-http.ts";
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
const connection = await RawHttpConnection.open(troupe.url);

/** One request's wall time, its answer read to the end; anything but a 200 stops the bench. */
async function once(bytes: Buffer): Promise<number> {
  const started = performance.now();
  const answer = await connection.send(bytes);
  const ms = performance.now() - started;
  if (answer.status !== 200) throw new Error(`${answer.status} ${answer.body.toString().slice(0, 300)}`);
  return ms;
}
const floor = connection.request("GET", "/v1/models", { authorization: auth.authorization });
const hit = connection.request("POST", "/v1/chat/completions", auth, body);
const live = connection.request("POST", "/v1/chat/completions", { ...auth, "troupe-cache": "bypass" }, body);

const answerBytes = (await connection.send(hit)).body.length;
const check = await connection.send(hit);
if (check.headers.get("troupe-cache") !== "hit") throw new Error(`expected a hit, got ${check.headers.get("troupe-cache")}`);
const floorBytes = (await connection.send(floor)).body.length;
// Warm up each path, then measure them taking turns request by request, so the machine's drift (other jobs on a shared host) affects all three alike.
const paths = { floor, hit, live };
for (let i = 0; i < rounds; i++) for (const bytes of Object.values(paths)) await once(bytes);
const results: Record<string, number[]> = { floor: [], hit: [], live: [] };
for (let i = 0; i < rounds * 3; i++) for (const [name, bytes] of Object.entries(paths)) results[name]!.push(await once(bytes));
const s = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, summarize(v)]));
console.log(`answer: ${answerBytes} bytes of JSON (the floor's: ${floorBytes}); ${rounds * 3} requests per path, sequential`);
for (const [name, r] of Object.entries(s)) console.log(`${name.padEnd(6)} p50 ${fmt(r!.p50, 3)} ms  p99 ${fmt(r!.p99, 3)} ms`);
console.log(`hit above floor: p50 +${fmt(s["hit"]!.p50 - s["floor"]!.p50, 3)} ms; live above hit: p50 +${fmt(s["live"]!.p50 - s["hit"]!.p50, 3)} ms`);
// Paired: each turn's hit minus the floor request just before it (steadier than the difference of two p50s on a busy machine).
const paired = summarize(results["hit"]!.map((ms, i) => ms - (results["floor"]![i] ?? 0)));
console.log(`hit above floor, paired per turn: p50 +${fmt(paired.p50, 3)} ms`);
connection.close();
await troupe.stop();
await fake.close();
