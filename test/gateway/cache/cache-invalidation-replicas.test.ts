// What one replica keeps of the response cache never outlives a change made
// on another (gateway/cache/cache-invalidation.ts): two Troupes on one Redis,
// on a clock that does not move, so a copy trusted "for 5 s" would be trusted
// for the whole test and only the broadcast can drop it. Turning the cache
// off on B is seen on A at once; a clear on B is a miss on A at once; an
// organization's deletion on B leaves A serving nothing of it and Redis
// holding none of its keys.
import { Redis } from "ioredis";
import t from "tap";
import { eventually, projectWithLiveKey, startFakeOpenAI } from "../../support/billing.ts";
import { startTestRedis } from "../../support/redis.ts";
import { field, signup, startTestTroupe, type TestTroupe } from "../../support/troupe.ts";

t.setTimeout(120_000);
const frozenMs = Date.now();
const clock = { now: () => frozenMs };
const redis = await startTestRedis();
const { fake, router } = await startFakeOpenAI();
const troupes: TestTroupe[] = [];
for (let i = 0; i < 2; i++) troupes.push(await startTestTroupe({ REDIS_URL: redis.url }, { router: router(), clock }));
const [a, b] = troupes as [TestTroupe, TestTroupe];
const raw = new Redis(redis.url);
t.teardown(async () => {
  await raw.quit();
  for (const troupe of troupes) await troupe.stop();
  await fake.close();
  await redis.stop();
});

const user = await signup(a, "cache-invalidation");
const project = await projectWithLiveKey(a, user.token, user.orgId, "cached");
const chat = (troupe: TestTroupe, content: string) =>
  troupe.request("POST", "/v1/chat/completions", { token: project.liveKey, body: { model: "gpt-4.1-mini", messages: [{ role: "user", content }] } });
const outcome = async (troupe: TestTroupe, content: string) => (await chat(troupe, content)).headers.get("troupe-cache");
const setCache = async (troupe: TestTroupe, enabled: boolean) => {
  const res = await troupe.request("PATCH", `/v1/projects/${project.projectId}/cache`, { token: user.token, body: { enabled } });
  if (res.status !== 200) throw new Error(`PATCH cache: ${res.status} ${res.text}`);
};
const question = "kept by replica A";

t.test("stored on A, a hit on B; turned off on B, A stops serving it at once", async (t) => {
  await setCache(b, true);
  const miss = await chat(a, question);
  t.equal(miss.headers.get("troupe-cache"), "miss", "A reads the settings B wrote (it had no copy)");
  const hit = await eventually(() => chat(b, question), (r) => r.headers.get("troupe-cache") === "hit", 5_000);
  t.equal(hit.headers.get("troupe-cache"), "hit", "B serves A's answer");
  t.same(field(hit.body, "content"), field(miss.body, "content"));
  t.equal(await outcome(a, question), "hit", "A serves it too, from its copy of the settings");

  await setCache(b, false);
  // Not after the copy's 5 s (the clock never gets there): the broadcast drops it; polled only for the message's trip through Redis.
  const off = await eventually(() => chat(a, question), (r) => r.headers.get("troupe-cache") === null, 2_000);
  t.equal(off.headers.get("troupe-cache"), null, "A: cache off, no troupe-cache header");
  t.equal(off.status, 200);

  await setCache(b, true);
  const on = await eventually(() => chat(a, question), (r) => r.headers.get("troupe-cache") !== null, 2_000);
  t.equal(on.headers.get("troupe-cache"), "hit", "turned on again on B: A serves the stored answer again");
});

t.test("cleared on B: a miss on A at once", async (t) => {
  t.equal(await outcome(b, question), "hit", "B, before the clear");
  const cleared = await b.request("POST", `/v1/projects/${project.projectId}/cache/clear`, { token: user.token });
  t.equal(cleared.status, 200, cleared.text);
  t.ok(Number(field(cleared.body, "entries")) >= 1, "the clear removed A's entry");
  t.equal(await outcome(a, question), "miss", "A's very next request");
  const again = await eventually(() => chat(b, question), (r) => r.headers.get("troupe-cache") === "hit", 5_000);
  t.equal(again.headers.get("troupe-cache"), "hit", "A's new answer is B's hit");
});

t.test("the organization deleted on B: A serves nothing of it", async (t) => {
  const orgKeys = async () => (await raw.keys("troupe:cache:*")).filter((k) => k.includes(`{${user.orgId}}`));
  t.ok((await orgKeys()).length > 0, "the organization's cache keys, before");
  const settingsKeys = () => raw.keys(`*project-cache-settings:${project.projectId}*`);
  t.equal((await settingsKeys()).length, 1, "the project's cache settings, before");
  t.equal(await outcome(a, question), "hit", "A, before the deletion");
  const deleted = await b.request("DELETE", `/v1/orgs/${user.orgId}`, { token: user.token, body: { confirm: user.orgId } });
  t.equal(deleted.status, 200, deleted.text);
  const after = await eventually(() => chat(a, question), (r) => r.status === 401, 2_000);
  t.equal(after.status, 401, "A: the key is gone");
  t.equal(after.headers.get("troupe-cache"), null, "and nothing came from the cache");
  t.same(await orgKeys(), [], "no key of the organization in Redis, after A's requests too");
  t.same(await settingsKeys(), [], "nor its project's cache settings");
});
