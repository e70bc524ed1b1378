// A cached-prompt call through /gemini bills its cached tokens at the
// model's cached price: a long prefix sent twice to gemini-2.5-flash at the
// Gemini fake (which caches as Gemini's implicit caching does, from 1,024
// tokens) comes back with usageMetadata.cachedContentTokenCount, and the
// usage report shows those tokens and a cost with them at the catalogue's
// cached price ($0.075 / 1M, not the $0.30 input price), to the nano-dollar;
// the budget's spend agrees. JSON and a stream (alt=sse) alike.
import t from "tap";
import { eventually, projectWithLiveKey } from "../../support/billing.ts";
import { field } from "../../support/troupe.ts";
import { models, startGeminiHarness } from "./gemini-harness.ts";

t.setTimeout(90_000);
const h = await startGeminiHarness();
t.teardown(() => h.stop());

// gemini-2.5-flash in providers/catalogue.json, in nano-dollars per token.
const price = { input: 300, cached: 75, output: 2500 };

interface Live {
  calls: number;
  cost_nanos: number;
  cost_usd: number;
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
}

async function report(projectId: string, calls: number): Promise<Live> {
  const res = await eventually(
    () => h.request("GET", `/v1/projects/${projectId}/usage`, { token: h.session }),
    (r) => r.status === 200 && field(r.body, "live", "calls") === calls,
  );
  return field(res.body, "live") as Live;
}

const long = { role: "user", parts: [{ text: `tell me about ${"lighthouses ".repeat(1100)}` }] };
const conversation = { contents: [long, { role: "model", parts: [{ text: "Echo: lighthouses" }] }, { role: "user", parts: [{ text: "once more" }] }] };

t.test("/gemini generateContent and a stream: cachedContentTokenCount billed at the cached price, shown in the usage report", async (t) => {
  const p = await projectWithLiveKey(h, h.session, h.orgId, "gemini-cache");
  const headers = { "x-goog-api-key": p.liveKey };
  const cold = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, conversation, headers);
  t.equal(cold.status, 200, cold.text.slice(0, 300));
  t.equal(field(cold.body, "usageMetadata", "cachedContentTokenCount"), undefined, "nothing cached on the first call");
  const first = await report(p.projectId, 1);
  t.equal(first.cached_input_tokens, 0);
  t.equal(first.cost_nanos, first.input_tokens * price.input + first.output_tokens * price.output, "all input at the input price");

  const warm = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, conversation, headers);
  const cached = Number(field(warm.body, "usageMetadata", "cachedContentTokenCount"));
  t.ok(cached >= 1024, `the long prefix was read from Gemini's cache (${cached} tokens)`);
  const prompt = Number(field(warm.body, "usageMetadata", "promptTokenCount"));
  t.ok(prompt > cached, "cached tokens are part of the prompt's");
  const both = await report(p.projectId, 2);
  t.equal(both.cached_input_tokens, cached, "the report shows the cached tokens");
  const second = { input: both.input_tokens - first.input_tokens, output: both.output_tokens - first.output_tokens, cost: both.cost_nanos - first.cost_nanos };
  t.equal(second.input, prompt, "the report's input is the prompt's count");
  t.equal(second.cost, (second.input - cached) * price.input + cached * price.cached + second.output * price.output, "the cached tokens at the cached price, the rest at the input price");
  t.ok(second.cost < second.input * price.input, "cheaper than the same prompt at the input price");

  const streamed = await h.call("POST", `/v1beta/models/${models.gemini}:streamGenerateContent?alt=sse`, conversation, headers);
  t.equal(streamed.status, 200);
  const streamedCached = Number(/"cachedContentTokenCount":(\d+)/.exec(streamed.text)?.[1]);
  t.equal(streamedCached, cached, "the stream's last chunk says so too");
  const three = await report(p.projectId, 3);
  t.equal(three.cached_input_tokens, 2 * cached);
  const third = { input: three.input_tokens - both.input_tokens, output: three.output_tokens - both.output_tokens, cost: three.cost_nanos - both.cost_nanos };
  t.equal(third.cost, (third.input - cached) * price.input + cached * price.cached + third.output * price.output, "streamed: the same rule");
  const budget = await h.request("GET", `/v1/projects/${p.projectId}/budget`, { token: h.session });
  t.equal(field(budget.body, "spent_usd"), three.cost_usd, "the budget's spend agrees with the report");
});
