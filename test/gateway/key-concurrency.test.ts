// A key's max_concurrent over real sockets: calls in flight past it are 429
// with Retry-After (no provider call), and every way a call ends — a JSON
// answer, a stream, an error — frees its slot.
import t from "tap";
import { hello, startFakeOpenAI } from "../support/billing.ts";
import { field, signup, str, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(60_000);
const { fake, router } = await startFakeOpenAI();
t.teardown(() => fake.close());
const troupe = await startTestTroupe({}, { router: router() });
t.teardown(() => troupe.stop());
const owner = await signup(troupe, "concurrency");

async function keyWith(limits: Record<string, unknown>): Promise<string> {
  const res = await troupe.request("POST", `/v1/environments/${owner.developmentEnvId}/api-keys`, { token: owner.token, body: { name: "concurrent", ...limits } });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
  return str(res.body, "key");
}

const chat = (key: string, body: unknown = hello) => troupe.request("POST", "/v1/chat/completions", { token: key, body });

t.test("past max_concurrent: 429 with Retry-After, before any provider call", async (t) => {
  const key = await keyWith({ max_concurrent: 2 });
  fake.faults.delayMs = 400;
  t.teardown(() => void (fake.faults.delayMs = 0));
  const before = fake.requests.length;
  const answers = await Promise.all([chat(key), chat(key), chat(key), chat(key)]);
  const statuses = answers.map((a) => a.status).sort();
  t.same(statuses, [200, 200, 429, 429], "two in flight at once");
  t.equal(fake.requests.length - before, 2, "the refused calls reached no provider");
  for (const refused of answers.filter((a) => a.status === 429)) {
    t.equal(field(refused.body, "error", "code"), "rate_limited");
    t.match(String(field(refused.body, "error", "message")), /max_concurrent/);
    t.ok(Number(refused.headers.get("retry-after")) >= 1, "says when to retry");
  }
  const other = await keyWith({});
  const unlimited = await Promise.all([chat(other), chat(other), chat(other)]);
  t.same(unlimited.map((a) => a.status), [200, 200, 200], "a key without the limit is not held to it");
});

t.test("every ending frees the slot: answers, errors, streams", async (t) => {
  const key = await keyWith({ max_concurrent: 1 });
  for (let i = 0; i < 3; i++) t.equal((await chat(key)).status, 200, `answer ${i}`);
  const invalid = await chat(key, { messages: [] });
  t.equal(invalid.status, 400);
  t.equal((await chat(key)).status, 200, "after a 400");
  const stream = await fetch(`http://127.0.0.1:${troupe.port}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ ...hello, stream: true }),
  });
  await stream.text();
  t.equal((await chat(key)).status, 200, "after a stream");
  fake.faults.failureRate = 1;
  const failed = await chat(key);
  fake.faults.failureRate = 0;
  t.not(failed.status, 200, "a provider failure");
  t.equal((await chat(key)).status, 200, "after a provider failure");
});
