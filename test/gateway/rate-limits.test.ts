// Per-key limits over HTTP: requests and tokens per minute, 429 with
// Retry-After, and X-RateLimit-* headers on every API-key answer (200, 4xx,
// SSE) — on one embedded Troupe, then across three Troupes sharing Redis,
// where a key's limit is the limit whatever the number of replicas.
import t from "tap";
import { hello, startFakeOpenAI } from "../support/billing.ts";
import { startReplicas } from "../support/replicas.ts";
import { field, signup, str, startTestTroupe, type TestTroupe } from "../support/troupe.ts";

t.setTimeout(180_000);
const { fake, router } = await startFakeOpenAI();
t.teardown(() => fake.close());

async function keyWith(troupe: TestTroupe, limits: Record<string, number>) {
  const user = await signup(troupe, "limits");
  const res = await troupe.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body: { name: "limited", ...limits } });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
  return str(res.body, "key");
}

t.test("embedded: requests per minute, headers on every answer", async (t) => {
  const troupe = await startTestTroupe({}, { router: router() });
  t.teardown(() => troupe.stop());
  const key = await keyWith(troupe, { rate_limit_per_minute: 3 });
  const answers = [];
  for (let i = 0; i < 4; i++) answers.push(await troupe.request("POST", "/v1/chat/completions", { token: key, body: hello }));
  t.same(answers.map((a) => a.status), [200, 200, 200, 429]);
  t.same(answers.map((a) => a.headers.get("x-ratelimit-remaining")), ["2", "1", "0", "0"]);
  for (const a of answers) {
    t.equal(a.headers.get("x-ratelimit-limit"), "3");
    const reset = Number(a.headers.get("x-ratelimit-reset"));
    t.ok(reset >= 1 && reset <= 60, `reset in ${reset} s`);
  }
  t.equal(field(answers[3]!.body, "error", "code"), "rate_limited");
  t.ok(Number(answers[3]!.headers.get("retry-after")) >= 1, "429 says when to retry");

  const other = await keyWith(troupe, { rate_limit_per_minute: 10 });
  const invalid = await troupe.request("POST", "/v1/chat/completions", { token: other, body: { messages: [] } });
  t.equal(invalid.status, 400);
  t.equal(invalid.headers.get("x-ratelimit-remaining"), "9", "a 400 after admission carries the headers too");
  const stream = await fetch(`http://127.0.0.1:${troupe.port}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${other}`, "content-type": "application/json" },
    body: JSON.stringify({ ...hello, stream: true }),
  });
  await stream.text();
  t.equal(stream.headers.get("x-ratelimit-remaining"), "8", "and a stream");
  const session = await signup(troupe, "session");
  const account = await troupe.request("GET", "/v1/account", { token: session.token });
  t.equal(account.headers.get("x-ratelimit-limit"), null, "session answers carry none");
});

t.test("embedded: tokens per minute", async (t) => {
  const troupe = await startTestTroupe({}, { router: router() });
  t.teardown(() => troupe.stop());
  const key = await keyWith(troupe, { token_limit_per_minute: 40 });
  const first = await troupe.request("POST", "/v1/chat/completions", { token: key, body: hello });
  t.equal(first.status, 200);
  const perCall = Number(field(first.body, "input_tokens")) + Number(field(first.body, "output_tokens"));
  t.equal(first.headers.get("x-ratelimit-limit-tokens"), "40");
  t.equal(first.headers.get("x-ratelimit-remaining-tokens"), "40", "admitted before its own tokens were known");
  const statuses = [200];
  let last = first;
  while (statuses.length < 20 && last.status === 200) {
    last = await troupe.request("POST", "/v1/chat/completions", { token: key, body: hello });
    statuses.push(last.status);
  }
  t.equal(statuses.filter((s) => s === 200).length, Math.ceil(40 / perCall), `admitted while under 40 tokens (${perCall} per call)`);
  t.equal(last.status, 429);
  t.match(last.body, { error: { code: "rate_limited", message: /token limit/ } });
  t.equal(last.headers.get("x-ratelimit-remaining-tokens"), "0");
  t.ok(Number(last.headers.get("retry-after")) >= 1);
});

t.test("3 replicas on Redis: a 1,000-requests/min key gets exactly 1,000 admissions", async (t) => {
  const cluster = await startReplicas(3, {}, () => ({ router: router() }));
  t.teardown(() => cluster.stop());
  const troupes = cluster.replicas;
  const key = await keyWith(troupes[0]!, { rate_limit_per_minute: 1000 });
  const statuses: number[] = [];
  // 1,300 requests in waves of 100, spread over the replicas in turn.
  for (let wave = 0; wave < 13; wave++) {
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => troupes[i % 3]!.request("GET", "/v1/models?category=embedding", { token: key })));
    statuses.push(...answers.map((a) => a.status));
  }
  t.equal(statuses.filter((s) => s === 200).length, 1000);
  t.equal(statuses.filter((s) => s === 429).length, 300);
});
