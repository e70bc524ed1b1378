// A key's tokens per minute are reserved at admission, as budgets reserve
// money (the hostile probe: a 1,000-token key let 50 concurrent ~200,000-token
// calls through, each admitted before any was billed). Concurrent calls see
// each other's reservations; the bill replaces the estimate by the real
// count; a call that fails releases its reservation.
import t from "tap";
import { hello, startFakeOpenAI } from "../support/billing.ts";
import { field, signup, str, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(60_000);
const { fake, router } = await startFakeOpenAI();
t.teardown(() => fake.close());
const troupe = await startTestTroupe({}, { router: router() });
t.teardown(() => troupe.stop());
const owner = await signup(troupe, "tokens");

async function keyWith(limits: Record<string, unknown>): Promise<string> {
  const res = await troupe.request("POST", `/v1/environments/${owner.developmentEnvId}/api-keys`, { token: owner.token, body: { name: "tpm", ...limits } });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
  return str(res.body, "key");
}

const chat = (key: string, body: unknown) => troupe.request("POST", "/v1/chat/completions", { token: key, body });

t.test("50 concurrent large calls on a 1,000-token key: one admitted, the rest 429 with Retry-After", async (t) => {
  const key = await keyWith({ token_limit_per_minute: 1000 });
  fake.faults.delayMs = 300;
  t.teardown(() => void (fake.faults.delayMs = 0));
  const before = fake.requests.length;
  const big = { ...hello, max_tokens: 20_000 };
  const answers = await Promise.all(Array.from({ length: 50 }, () => chat(key, big)));
  const admitted = answers.filter((a) => a.status === 200).length;
  t.equal(admitted, 1, "only the first reservation fits the window");
  t.equal(fake.requests.length - before, 1, "the refused calls reached no provider");
  const refused = answers.filter((a) => a.status === 429);
  t.equal(refused.length, 49);
  t.match(refused[0]?.body, { error: { code: "rate_limited", message: /token limit of 1000/ } });
  t.ok(refused.every((a) => Number(a.headers.get("retry-after")) >= 1), "each says when to retry");
});

t.test("the bill replaces the estimate; a failed call releases it", async (t) => {
  const key = await keyWith({ token_limit_per_minute: 5000 });
  // Each call reserves its body and 4,000 output tokens: two at once would not fit, one after another do, once billed.
  const asks = { ...hello, max_tokens: 4000 };
  const first = await chat(key, asks);
  t.equal(first.status, 200);
  const used = Number(field(first.body, "input_tokens")) + Number(field(first.body, "output_tokens"));
  t.ok(used < 100, `billed ${used} tokens, not the 4,000 reserved`);
  const second = await chat(key, asks);
  t.equal(second.status, 200, "admitted: the window holds the first call's real tokens, not its estimate");
  t.equal(second.headers.get("x-ratelimit-remaining-tokens"), String(5000 - used), "the window counts the billed tokens only");
  fake.faults.failureRate = 1;
  const failed = await chat(key, asks);
  fake.faults.failureRate = 0;
  t.not(failed.status, 200);
  const third = await chat(key, asks);
  t.equal(third.status, 200, "the failed call's reservation was released");
  t.equal(third.headers.get("x-ratelimit-remaining-tokens"), String(5000 - 2 * used), "and nothing of it stayed");
});
