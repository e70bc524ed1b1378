// The exact cache's operations over real sockets: GET /metrics (its own
// listener) counts every cache decision by outcome and the bytes stored and
// served, exactly as many as were sent; and with CACHE_HIT_PRICE_FRACTION set
// a hit is billed that fraction of what the same call costs from the
// provider, in the usage report's `cache: hit` group.
import t from "tap";
import { eventually, projectWithLiveKey, startFakeOpenAI } from "../../support/billing.ts";
import { midMonthClock } from "../../support/mid-month-clock.ts";
import { parsePrometheus, sampleValue, type Sample } from "../../support/prometheus-text.ts";
import { field, signup, startTestTroupe } from "../../support/troupe.ts";

const fraction = 0.25;
const { fake, router } = await startFakeOpenAI();
const troupe = await startTestTroupe({ METRICS_PORT: "0", METRICS_HOST: "127.0.0.1", CACHE_HIT_PRICE_FRACTION: String(fraction) }, { router: router(), clock: midMonthClock() });
t.teardown(async () => {
  await troupe.stop();
  await fake.close();
});
const user = await signup(troupe, "cache-ops");
const project = await projectWithLiveKey(troupe, user.token, user.orgId, "cache-ops");
const on = await troupe.request("PATCH", `/v1/projects/${project.projectId}/cache`, { token: user.token, body: { enabled: true } });
if (on.status !== 200) throw new Error(`cache settings: ${on.status} ${on.text}`);

const chat = (content: string, mode?: string) =>
  troupe.request("POST", "/v1/chat/completions", {
    token: project.liveKey,
    headers: mode ? { "troupe-cache": mode } : {},
    body: { model: "gpt-4.1-mini", routing_strategy: "manual", messages: [{ role: "user", content }], max_tokens: 200 },
  });

async function scrape(): Promise<Sample[]> {
  const res = await fetch(`http://127.0.0.1:${troupe.metricsPort}/metrics`);
  return parsePrometheus(await res.text());
}

// One question, every outcome: a miss (stored), three hits, a refresh (called and stored again), a bypass (neither).
const question = "Which metals conduct heat best?";
const sent: Record<string, number> = { miss: 0, hit: 0, refresh: 0, bypass: 0 };
const answers: string[] = [];
for (const mode of [undefined, undefined, undefined, undefined, "refresh", "bypass"]) {
  const res = await chat(question, mode);
  if (res.status !== 200) throw new Error(`chat: ${res.status} ${res.text}`);
  const outcome = res.headers.get("troupe-cache") ?? "none";
  sent[outcome] = (sent[outcome] ?? 0) + 1;
  answers.push(String(field(res.body, "content")));
}

t.test("the requests were the outcomes they were sent as", async (t) => {
  t.same(sent, { miss: 1, hit: 3, refresh: 1, bypass: 1 });
  t.equal(fake.requests.filter((r) => r.path.endsWith("/chat/completions")).length, 3, "the provider called for the miss, the refresh and the bypass only");
});

t.test("/metrics counts each outcome, the answers stored and the bytes", async (t) => {
  // A write ends off the answer's path (the refresh's may still be under way when the bypass answers).
  const samples = await eventually(scrape, (s) => sampleValue(s, "troupe_cache_stores_total") >= 2);
  for (const outcome of ["hit", "miss", "refresh", "bypass"]) {
    t.equal(sampleValue(samples, "troupe_cache_lookups_total", { outcome }), sent[outcome], `${outcome}: as many as sent`);
  }
  t.equal(sampleValue(samples, "troupe_cache_stores_total"), 2, "the miss and the refresh were stored");
  const stored = sampleValue(samples, "troupe_cache_stored_bytes_total");
  const held = sampleValue(samples, "troupe_cache_bytes");
  t.ok(held > 0, `the store holds ${held} bytes`);
  t.ok(stored > held && stored <= 2 * held + 16, `two writes of one entry (${stored} bytes written), the second replacing the first (${held} held)`);
  const hitBytes = sampleValue(samples, "troupe_cache_hit_bytes_total");
  t.ok(hitBytes >= 3 * (answers[1]?.length ?? 0) && hitBytes % 3 === 0, `three hits of one answer served: ${hitBytes} bytes`);
});

t.test("a hit is billed CACHE_HIT_PRICE_FRACTION of the provider call's price, grouped as cache: hit", async (t) => {
  type Group = { key: string; live: { calls: number; cost_nanos: number; output_tokens: number } };
  const report = await eventually(
    () => troupe.request("GET", `/v1/projects/${project.projectId}/usage?group_by=cache`, { token: user.token }),
    (r) => {
      const groups = field(r.body, "groups") as Group[] | undefined;
      return Array.isArray(groups) && groups.some((g) => g.key === "hit" && g.live.calls === 3) && groups.some((g) => g.key === "none" && g.live.calls === 3);
    },
  );
  const groups = field(report.body, "groups") as Group[];
  const hit = groups.find((g) => g.key === "hit");
  const none = groups.find((g) => g.key === "none");
  t.equal(hit?.live.calls, 3);
  t.equal(none?.live.calls, 3);
  // The same question each time, so every provider call cost the same and a hit stands for the same tokens.
  const callNanos = (none?.live.cost_nanos ?? 0) / 3;
  t.ok(callNanos > 0, `a provider call costs ${callNanos} nano-dollars`);
  t.equal(hit?.live.output_tokens, none?.live.output_tokens, "hits count the tokens they stand for");
  const expected = 3 * Math.round(callNanos * fraction);
  t.ok(Math.abs((hit?.live.cost_nanos ?? 0) - expected) <= 3, `hits billed ${hit?.live.cost_nanos} nanos, ${fraction} of ${3 * callNanos} (±1 per record's rounding)`);
});
