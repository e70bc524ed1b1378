// A cached-prompt call through each door (/v1, /openai/v1, /anthropic/v1)
// bills its prompt-cache tokens at the model's cached price, to the
// nano-dollar, and the usage report shows the counts; the budget's spend
// agrees with the report. The simulated model reports the cache (its rule:
// a prefix of 1,024+ tokens before the last user message, read once the
// conversation holds an assistant turn, written on a first turn), priced
// here by a catalogue that gives it real prices (the shipped simulated
// models are free). Usage goes to the real ledger.
import t, { type Test } from "tap";
import { loadConfig } from "../../gateway/config.ts";
import { createAdapters } from "../../providers/index.ts";
import { Catalogue, type ModelEntry } from "../../providers/catalogue.ts";
import { Router } from "../../providers/router.ts";
import { projectWithLiveKey, eventually } from "../support/billing.ts";
import { field, signup, startTestTroupe } from "../support/troupe.ts";

// Nano-dollars per token: $2 / 1M input, $0.50 cached, $2.50 cache write, $8 output.
const price = { input: 2000, cached: 500, written: 2500, output: 8000 };
const shipped = Catalogue.load();
const priced: ModelEntry[] = shipped.models.map((m) =>
  m.id === "simulated-chat"
    ? { ...m, pricing: { unit: "1M tokens", input_usd_per_unit: 2, cached_input_usd_per_unit: 0.5, cache_write_input_usd_per_unit: 2.5, output_usd_per_unit: 8 } }
    : m,
);
const config = loadConfig({});
const troupe = await startTestTroupe({}, { router: (wiring) => new Router({ catalogue: new Catalogue(priced), adapters: createAdapters(config.providers), timeoutMs: 5000, maxAttempts: 1, settingsOf: () => [], ...wiring }) });
t.teardown(() => troupe.stop());
const user = await signup(troupe, "prompt-cache");

// 1,100 words: 1,103 prefix tokens with the system message's 3, so 1,024 cached (a multiple of 128).
const longSystem = "word ".repeat(1100).trim();

interface Billed {
  cost_nanos: number;
  cost_usd: number;
  input_tokens: number;
  cached_input_tokens: number;
  cache_write_input_tokens: number;
  output_tokens: number;
  calls: number;
}

async function report(projectId: string, calls: number): Promise<Billed> {
  const res = await eventually(
    () => troupe.request("GET", `/v1/projects/${projectId}/usage`, { token: user.token }),
    (r) => r.status === 200 && field(r.body, "live", "calls") === calls,
  );
  t.equal(res.status, 200, res.text);
  return field(res.body, "live") as Billed;
}

function expectedNanos(b: Billed): number {
  return (b.input_tokens - b.cached_input_tokens - b.cache_write_input_tokens) * price.input + b.cached_input_tokens * price.cached + b.cache_write_input_tokens * price.written + b.output_tokens * price.output;
}

async function checkBilled(t: Test, projectId: string, counts: { cached: number; written: number }, calls = 1): Promise<Billed> {
  const live = await report(projectId, calls);
  t.equal(live.cached_input_tokens, counts.cached, "the report shows the tokens read from the cache");
  t.equal(live.cache_write_input_tokens, counts.written, "and those written to it");
  t.ok(live.input_tokens > counts.cached + counts.written, "as parts of the input");
  t.equal(live.cost_nanos, expectedNanos(live), "cached tokens at the cached price, written at the write price, the rest at the input price");
  const budget = await troupe.request("GET", `/v1/projects/${projectId}/budget`, { token: user.token });
  t.equal(field(budget.body, "spent_usd"), live.cost_usd, "the budget's spend agrees with the report to the micro-dollar");
  return live;
}

const continued = [
  { role: "system", content: longSystem },
  { role: "user", content: "first question" },
  { role: "assistant", content: "first answer" },
  { role: "user", content: "second question" },
];

t.test("/v1/chat/completions", async (t) => {
  const p = await projectWithLiveKey(troupe, user.token, user.orgId, "v1");
  const res = await troupe.request("POST", "/v1/chat/completions", { token: p.liveKey, body: { model: "simulated-chat", routing_strategy: "manual", messages: continued } });
  t.equal(res.status, 200, res.text);
  t.equal(field(res.body, "extras"), undefined, "/v1's body stays the spec's");
  const live = await checkBilled(t, p.projectId, { cached: 1024, written: 0 });
  // This call: 1,118 input tokens (1,024 cached), 6 output: 94 × 2,000 + 1,024 × 500 + 6 × 8,000 nano-dollars.
  t.equal(live.input_tokens, 1118);
  t.equal(live.output_tokens, 6);
  t.equal(live.cost_nanos, 748_000);
  // Streamed, on a project with a hard limit (the reservation is settled at the cached price).
  const hard = await projectWithLiveKey(troupe, user.token, user.orgId, "v1-hard");
  const put = await troupe.request("PUT", `/v1/projects/${hard.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: 100, hard_limit: true } });
  t.equal(put.status, 200, put.text);
  const streamed = await troupe.request("POST", "/v1/chat/completions", { token: hard.liveKey, body: { model: "simulated-chat", routing_strategy: "manual", stream: true, messages: continued } });
  t.equal(streamed.status, 200, streamed.text);
  t.notMatch(streamed.text, /extras/, "/v1's stream carries no extras");
  const hardLive = await checkBilled(t, hard.projectId, { cached: 1024, written: 0 });
  t.equal(hardLive.cost_nanos, live.cost_nanos, "streamed and reserved: the same cost");
});

t.test("/openai/v1/chat/completions", async (t) => {
  const p = await projectWithLiveKey(troupe, user.token, user.orgId, "openai");
  const res = await troupe.request("POST", "/openai/v1/chat/completions", { token: p.liveKey, body: { model: "simulated-chat", messages: continued } });
  t.equal(res.status, 200, res.text);
  const live = await checkBilled(t, p.projectId, { cached: 1024, written: 0 });
  t.equal(live.cost_nanos, 748_000, "the same call as on /v1, the same cost");
  t.same(field(res.body, "usage", "prompt_tokens_details", "cached_tokens"), 1024, "the mount's own usage field says so too");
});

t.test("/anthropic/v1/messages: a first turn writes the cache, the next reads it", async (t) => {
  const p = await projectWithLiveKey(troupe, user.token, user.orgId, "anthropic");
  const headers = { "x-api-key": p.liveKey, "anthropic-version": "2023-06-01" };
  const first = await troupe.request("POST", "/anthropic/v1/messages", { headers, body: { model: "simulated-chat", max_tokens: 100, system: longSystem, messages: [{ role: "user", content: "first question" }] } });
  t.equal(first.status, 200, first.text);
  const written = await checkBilled(t, p.projectId, { cached: 0, written: 1024 });
  // 1,108 input tokens, 1,024 written: 84 × 2,000 + 1,024 × 2,500 + 6 × 8,000.
  t.equal(written.cost_nanos, 2_776_000);
  const second = await troupe.request("POST", "/anthropic/v1/messages", {
    headers,
    body: { model: "simulated-chat", max_tokens: 100, system: longSystem, messages: continued.slice(1) },
  });
  t.equal(second.status, 200, second.text);
  const both = await checkBilled(t, p.projectId, { cached: 1024, written: 1024 }, 2);
  t.equal(both.cost_nanos, 2_776_000 + 748_000, "the second call read the cache: 94 × 2,000 + 1,024 × 500 + 6 × 8,000 more");
});
