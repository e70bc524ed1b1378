// Two Troupes on one Redis share the response cache: an answer stored
// through one is a hit on the other (no provider call), streamed there in
// another mount's format (/v1 JSON stored, /openai/v1 stream served: one
// internal request, one key); the project's "clear cache" on one empties it for
// both; an organization's deletion leaves none of its keys in Redis.
import OpenAI from "openai";
import { Redis } from "ioredis";
import t from "tap";
import { eventually, projectWithLiveKey, startFakeOpenAI } from "../../support/billing.ts";
import { startTestRedis } from "../../support/redis.ts";
import { field, signup, startTestTroupe, type TestTroupe } from "../../support/troupe.ts";

t.setTimeout(120_000);
const redis = await startTestRedis();
const { fake, router } = await startFakeOpenAI();
const troupes: TestTroupe[] = [];
for (let i = 0; i < 2; i++) troupes.push(await startTestTroupe({ REDIS_URL: redis.url }, { router: router() }));
const [one, two] = troupes as [TestTroupe, TestTroupe];
t.teardown(async () => {
  for (const troupe of troupes) await troupe.stop();
  await fake.close();
  await redis.stop();
});

const user = await signup(one, "cache-replicas");
const project = await projectWithLiveKey(one, user.token, user.orgId, "cached");
const calls = () => fake.requests.filter((r) => r.path.endsWith("/chat/completions")).length;
const chat = (troupe: TestTroupe, content: string) =>
  troupe.request("POST", "/v1/chat/completions", { token: project.liveKey, body: { model: "gpt-4.1-mini", messages: [{ role: "user", content }] } });

t.test("settings changed on one replica are seen by the other", async (t) => {
  const on = await one.request("PATCH", `/v1/projects/${project.projectId}/cache`, { token: user.token, body: { enabled: true } });
  t.equal(on.status, 200, on.text);
  // The other replica trusts its copy of the settings for 5 s at most.
  const seen = await eventually(() => chat(two, "warm up"), (r) => r.headers.get("troupe-cache") !== null, 8_000);
  t.equal(seen.headers.get("troupe-cache"), "miss");
});

t.test("stored on one replica, a hit on the other", async (t) => {
  const before = calls();
  const miss = await chat(one, "shared between replicas");
  t.equal(miss.headers.get("troupe-cache"), "miss");
  const hit = await eventually(() => chat(two, "shared between replicas"), (r) => r.headers.get("troupe-cache") === "hit");
  t.equal(hit.headers.get("troupe-cache"), "hit");
  t.same(field(hit.body, "content"), field(miss.body, "content"));
  const client = new OpenAI({ baseURL: `${two.url}/openai/v1`, apiKey: project.liveKey, maxRetries: 0 });
  const stream = await client.chat.completions.create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "shared between replicas" }], stream: true }).withResponse();
  t.equal(stream.response.headers.get("troupe-cache"), "hit", "the other replica's /openai/v1 stream");
  let text = "";
  for await (const chunk of stream.data) text += chunk.choices[0]?.delta.content ?? "";
  t.equal(text, field(miss.body, "content"));
  t.ok(calls() - before <= 2, "at most the first call and a poll that raced the write");
});

t.test("clearing on one replica clears for both; deleting the organization leaves no key in Redis", async (t) => {
  const cleared = await two.request("POST", `/v1/projects/${project.projectId}/cache/clear`, { token: user.token });
  t.equal(cleared.status, 200, cleared.text);
  t.equal((await chat(one, "shared between replicas")).headers.get("troupe-cache"), "miss");
  await eventually(() => chat(two, "shared between replicas"), (r) => r.headers.get("troupe-cache") === "hit");
  const raw = new Redis(redis.url);
  t.teardown(() => void raw.quit());
  const orgKeys = async () => (await raw.keys("troupe:cache:*")).filter((k) => k.includes(`{${user.orgId}}`));
  t.ok((await orgKeys()).length > 0, "the organization's cache keys, before");
  const deleted = await one.request("DELETE", `/v1/orgs/${user.orgId}`, { token: user.token, body: { confirm: user.orgId } });
  t.equal(deleted.status, 200, deleted.text);
  t.same(await orgKeys(), [], "none after");
});
