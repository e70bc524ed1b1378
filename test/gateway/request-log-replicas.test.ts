// The request log with two replicas on one Redis, over real sockets: each
// replica keeps the entries of the calls it served in its own file, and a
// page or one entry read on either answers the same: every call of both,
// newest first, filtered, paged with one cursor across both; the console's
// charts and key use on either add both replicas' aggregates; a change of
// the project's content logging made through one holds on the other at once
// (broadcast, not its 5 s copy); and deleting the organization erases the
// entries on both.
import t from "tap";
import { eventually, hello, projectWithLiveKey, startFakeOpenAI } from "../support/billing.ts";
import { startReplicas } from "../support/replicas.ts";
import { requestIdsInFile } from "../support/request-log-file.ts";
import { field, signup, type TestResponse } from "../support/troupe.ts";

t.setTimeout(120_000);
const { fake, router } = await startFakeOpenAI();
t.teardown(() => fake.close());
const cluster = await startReplicas(2, {}, () => ({ router: router() }));
const [one, two] = cluster.replicas;
if (!one || !two) throw new Error("two replicas");
t.teardown(() => cluster.stop());

const owner = await signup(one, "reqlog-replicas");
const project = await projectWithLiveKey(one, owner.token, owner.orgId, "logged");
const idOf = (r: TestResponse) => r.headers.get("x-request-id") ?? "";
const ids = (r: TestResponse): string[] => {
  const data = field(r.body, "data");
  return Array.isArray(data) ? data.map((e) => String(field(e, "request_id"))) : [];
};
const logOn = (replica: typeof one, query = "") => replica.request("GET", `/v1/projects/${project.projectId}/requests${query}`, { token: owner.token });

// Calls alternate between the replicas: three on each, one of each three a 400.
const served: { replica: 1 | 2; id: string; status: number }[] = [];
for (let i = 0; i < 6; i++) {
  const replica = i % 2 === 0 ? one : two;
  const body = i % 3 === 2 ? { model: "gpt-4.1-mini", messages: [] } : hello;
  const res = await replica.request("POST", "/v1/chat/completions", { token: project.liveKey, body });
  served.push({ replica: i % 2 === 0 ? 1 : 2, id: idOf(res), status: res.status });
  // Distinct arrival milliseconds, so the expected order is the calls' order.
  await new Promise((r) => setTimeout(r, 5));
}
const newestFirst = served.map((s) => s.id).reverse();
const full = await eventually(() => logOn(one), (r) => ids(r).length >= 6);

t.test("each replica's file holds only the calls it served", async (t) => {
  for (const [i, replica] of [one, two].entries()) {
    const mine = served.filter((s) => s.replica === i + 1).map((s) => s.id).reverse();
    t.same(await requestIdsInFile(replica.dataDir, project.projectId), mine, `replica ${i + 1} keeps its own three`);
  }
});

t.test("a page on either replica lists every call of both, newest first", async (t) => {
  t.same(served.map((s) => s.status), [200, 200, 400, 200, 200, 400]);
  t.same(ids(full), newestFirst, "replica one: all six in order");
  const onTwo = await logOn(two);
  t.equal(onTwo.status, 200, onTwo.text);
  t.same(onTwo.body, full.body, "replica two answers the same page");
});

t.test("filters apply on every replica", async (t) => {
  const refused = served.filter((s) => s.status === 400).map((s) => s.id).reverse();
  t.same(ids(await logOn(one, "?status=400")), refused, "the 400 of each replica");
  t.same(ids(await logOn(two, "?status=400")), refused);
  t.same(ids(await logOn(two, "?status=200&limit=3")), served.filter((s) => s.status === 200).map((s) => s.id).reverse().slice(0, 3));
});

t.test("one entry by id is found from the other replica", async (t) => {
  for (const s of served.slice(0, 2)) {
    for (const replica of [one, two]) {
      const res = await replica.request("GET", `/v1/projects/${project.projectId}/requests/${s.id}`, { token: owner.token });
      t.equal(res.status, 200, `${s.id} (served by replica ${s.replica}) read on ${replica === one ? "one" : "two"}: ${res.text}`);
      t.equal(field(res.body, "request_id"), s.id);
    }
  }
  const missing = await two.request("GET", `/v1/projects/${project.projectId}/requests/req_nowhere`, { token: owner.token });
  t.equal(missing.status, 404, "an id no replica holds");
});

t.test("the cursor pages across both replicas, read on either", async (t) => {
  const seen: string[] = [];
  let cursor: string | null = null;
  let turn = 0;
  do {
    const res = await logOn(turn % 2 === 0 ? one : two, `?limit=2${cursor ? `&after=${cursor}` : ""}`);
    t.equal(res.status, 200, res.text);
    seen.push(...ids(res));
    cursor = field(res.body, "next_cursor") as string | null;
    turn += 1;
  } while (cursor !== null && turn < 10);
  t.same(seen, newestFirst, "three pages of two, alternating replicas: every entry once, in order");
});

t.test("the console's charts and key use on either replica count the calls of both", async (t) => {
  const data = field(full.body, "data");
  const entries = Array.isArray(data) ? data : [];
  const spent = entries.reduce<number>((sum, e) => sum + Number(field(e, "cost_usd")), 0);
  t.ok(spent > 0, "the calls cost something");
  const minuteOf = (iso: unknown) => Math.floor(Date.parse(String(iso)) / 60_000);
  for (const replica of [one, two]) {
    const res = await replica.request("GET", `/console/data.json?org=${owner.orgId}`, { token: owner.token });
    t.equal(res.status, 200, res.status === 200 ? "the console's data" : res.text);
    const traffic = field(res.body, "traffic", "rows");
    const org = Array.isArray(traffic) ? traffic.find((s) => field(s, "scope") === "organization") : undefined;
    const points = field(org, "points");
    const hourly = Array.isArray(points) ? points : [];
    t.equal(hourly.reduce<number>((sum, p) => sum + Number(field(p, "requests")), 0), 6, "the organization's chart: all six calls");
    t.equal(hourly.reduce<number>((sum, p) => sum + Number(field(p, "errors")), 0), 2, "and both 400s");
    const rows = field(res.body, "key_use", "rows");
    const row = Array.isArray(rows) ? rows.find((r) => field(r, "id") === project.liveKeyId) : undefined;
    t.equal(Math.round(Number(field(row, "spent_this_month_usd")) * 1e9), Math.round(spent * 1e9), "the key's spend this month: both replicas' calls");
    // Asserted when the six calls and this read share a minute (they take well under a second).
    const readMinute = minuteOf(field(res.body, "generated_at"));
    if (entries.every((e) => minuteOf(field(e, "created_at")) === readMinute)) t.equal(field(row, "requests_this_minute"), 6, "the key's requests this minute: both replicas'");
  }
});

t.test("content logging changed through one replica holds on the other at once", async (t) => {
  const settingsPath = `/v1/projects/${project.projectId}/request-log`;
  const ask = (marker: string) => ({ model: "gpt-4.1-mini", messages: [{ role: "user", content: marker }] });
  const entryOf = (id: string) =>
    eventually(
      () => two.request("GET", `/v1/projects/${project.projectId}/requests/${id}`, { token: owner.token }),
      (r) => r.status === 200,
    );
  // Replica two reads the settings (off) as a call ends there: its copy is fresh for 5 s.
  const before = await two.request("POST", "/v1/chat/completions", { token: project.liveKey, body: ask(`marker-before-${process.pid}`) });
  t.equal(before.status, 200, before.text);
  t.equal(field((await entryOf(idOf(before))).body, "content"), null, "off: no content");

  const on = await one.request("PATCH", settingsPath, { token: owner.token, body: { content_logging: true } });
  t.equal(on.status, 200, on.text);
  const marker = `marker-on-${process.pid}-${Date.now()}`;
  const logged = await two.request("POST", "/v1/chat/completions", { token: project.liveKey, body: ask(marker) });
  t.equal(logged.status, 200, logged.text);
  t.match(JSON.stringify(field((await entryOf(idOf(logged))).body, "content")), marker, "turned on through one: the next call on two keeps its prompt");

  const off = await one.request("PATCH", settingsPath, { token: owner.token, body: { content_logging: false } });
  t.equal(off.status, 200, off.text);
  const quiet = await two.request("POST", "/v1/chat/completions", { token: project.liveKey, body: ask(`marker-off-${process.pid}`) });
  t.equal(field((await entryOf(idOf(quiet))).body, "content"), null, "turned off through one: the next call on two keeps nothing");
});

t.test("deleting the organization erases the entries on both replicas", async (t) => {
  const deleted = await one.request("DELETE", `/v1/orgs/${owner.orgId}`, { token: owner.token, body: { confirm: owner.orgId } });
  t.equal(deleted.status, 200, deleted.text);
  for (const [i, replica] of [one, two].entries()) {
    const left = await eventually(async () => (await requestIdsInFile(replica.dataDir, project.projectId)).length, (n) => n === 0);
    t.equal(left, 0, `replica ${i + 1}'s file holds none of them`);
  }
});
