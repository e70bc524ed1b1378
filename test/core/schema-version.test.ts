// Schema versions (core/schema-version.ts, docs/operations/upgrades.md): the
// migration chain, and that every writer stamps the current version on what
// it stores, read back raw from the store itself (lmdb, Redis, files). The
// fixture test (test/ops/upgrade-fixtures.test.ts) checks the readers on
// real data of an earlier release.
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { open } from "lmdb";
import t from "tap";
import { ActorStore } from "../../actors/hosts/embedded/store.ts";
import { systemClock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import {
  migrateAlong,
  parseVersioned,
  readVersionField,
  SCHEMA_VERSION,
  SchemaVersionError,
  upgrade,
  versionedJson,
  type Migration,
} from "../../core/schema-version.ts";
import { LocalFileStore } from "../../media/local-file-store.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import { liveGenerations } from "../../tenancy/ledger-entry.ts";
import { RedisDataStore } from "../../tenancy/redis-data-store.ts";
import { RedisLedgerStore } from "../../tenancy/redis-ledger-store.ts";
import { UsageJournal } from "../../tenancy/usage-journal.ts";
import { startTestRedis } from "../support/redis.ts";

const usage: UsageRecord = {
  organization_id: "org_1",
  project_id: "prj_1",
  environment_id: "env_1",
  api_key_id: "key_1",
  live: false,
  category: "chat",
  model: "simulated-chat",
  provider: "simulated",
  input_tokens: 3,
  output_tokens: 2,
  units: 0,
  cost_usd: 0,
  cost_nanos: 0,
  request_id: "req_1",
  usage_key: "req_1",
  created_at: "2026-11-25T12:00:00.000Z",
};

t.test("the migration chain", async (t) => {
  const list: Migration[] = [
    { kind: "*", from: 0, why: "mark only", up: (v) => v },
    { kind: "data:user", from: 1, why: "name → display_name", up: (v) => ({ display_name: (v as { name: string }).name }) },
    { kind: "*", from: 1, why: "unchanged", up: (v) => v },
  ];
  t.same(migrateAlong(list, 2, "data:user", 0, { name: "Ada" }), { display_name: "Ada" }, "a v0 user takes every step, its own at 1 → 2");
  t.same(migrateAlong(list, 2, "data:apikey", 0, { id: "k" }), { id: "k" }, "another kind takes the * steps");
  t.same(migrateAlong(list, 2, "data:user", 1, { name: "Ada" }), { display_name: "Ada" }, "a v1 user starts at its version");
  t.throws(() => migrateAlong(list.slice(1), 2, "data:user", 0, {}), { name: "SchemaVersionError", message: /no migration registered for data:user from schema version 0/ });
  t.throws(() => migrateAlong(list, 2, "data:user", 3, {}), { message: /schema version 3; this Troupe reads up to 2/ }, "newer data than the code is refused");
  const current = { a: 1 };
  t.equal(upgrade("data:user", SCHEMA_VERSION, current), current, "a current record is returned as read");
  t.same(upgrade("data:user", 0, { a: 1 }), { a: 1 }, "a v0 record reads as today's (the registered v0 step)");
  t.throws(() => upgrade("data:user", SCHEMA_VERSION + 1, {}), SchemaVersionError);
});

t.test("envelopes and version fields", async (t) => {
  t.equal(versionedJson('{"a":1}'), `{"a":1,"schema_version":${SCHEMA_VERSION}}`, "an object: a last field, which older readers ignore");
  t.equal(versionedJson("{}"), `{"schema_version":${SCHEMA_VERSION}}`);
  t.equal(versionedJson('"2026-11-25"'), `{"schema_version":${SCHEMA_VERSION},"$value":"2026-11-25"}`, "any other value: wrapped");
  t.same(parseVersioned("data:user", versionedJson('{"id":"u"}')), { id: "u" }, "read back without the field");
  t.strictSame(Object.keys(parseVersioned("data:user", versionedJson('{"id":"u","n":1}')) as object), ["id", "n"]);
  t.same(parseVersioned("data:apikey-used", versionedJson('"2026-11-25"')), "2026-11-25");
  t.same(parseVersioned("data:user", '{"id":"u"}'), { id: "u" }, "an unmarked record is version 0");
  t.same(parseVersioned("data:x", "[1]"), [1]);
  t.throws(() => parseVersioned("data:user", `{"id":"u","schema_version":${SCHEMA_VERSION + 1}}`), { message: /data:user has schema version 2/ });
  t.same(readVersionField("vector-metadata", { schema_version: SCHEMA_VERSION, model: "m" }), { model: "m" }, "the field is taken off");
  t.same(readVersionField("vector-record", { s: SCHEMA_VERSION, content: "c" }, "s"), { content: "c" });
  t.same(readVersionField("vector-metadata", { model: "m" }), { model: "m" }, "absent: version 0");
});

t.test("the embedded stores write the version and read version 0", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-schema-"));
  const store = new EmbeddedDataStore(dir, systemClock);
  await store.apply([
    { op: "put", key: "user:u1", value: { id: "u1" } },
    { op: "put", key: "apikey-used:k1", value: "2026-11-25T12:00:00.000Z" },
  ]);
  await store.close();
  const actors = new ActorStore(dir);
  await actors.writeState("ConversationActor", "c1", '{"messages":[]}');
  const reminder = { type: "JobActor", id: "j1", name: "poll", method: "poll", input: null, dueAtMs: 1 };
  await actors.putReminder(reminder);
  await actors.close();

  const tenancy = open({ path: join(dir, "tenancy", "tenancy.lmdb"), compression: false });
  const docs = tenancy.openDB<{ v: unknown; s?: number }, string>({ name: "docs", encoding: "msgpack" });
  t.same(docs.get("user:u1"), { v: { id: "u1" }, s: SCHEMA_VERSION }, "a document carries its version");
  await docs.put("user:old", { v: { id: "old" } });
  await tenancy.close();
  const actorDb = open({ path: join(dir, "actors", "actors.mdb"), compression: false });
  const states = actorDb.openDB<string, [string, string]>({ name: "states", encoding: "string" });
  t.equal(states.get(["ConversationActor", "c1"]), `{"messages":[],"schema_version":${SCHEMA_VERSION}}`, "an actor state carries its version");
  await states.put(["ConversationActor", "old"], '{"messages":[1]}');
  const reminders = actorDb.openDB<unknown, [string, string, string]>({ name: "reminders", encoding: "msgpack" });
  t.same(reminders.get(["JobActor", "j1", "poll"]), { ...reminder, s: SCHEMA_VERSION }, "a reminder carries its version");
  await reminders.put(["JobActor", "old", "poll"], { ...reminder, id: "old" });
  await actorDb.close();

  const reopened = new EmbeddedDataStore(dir, systemClock);
  t.same(await reopened.getMany(["user:u1", "apikey-used:k1", "user:old"]), [{ id: "u1" }, "2026-11-25T12:00:00.000Z", { id: "old" }], "current and version-0 documents read");
  await reopened.close();
  const actorsAgain = new ActorStore(dir);
  t.same(actorsAgain.readState("ConversationActor", "c1"), { messages: [] });
  t.same(actorsAgain.readState("ConversationActor", "old"), { messages: [1] }, "a version-0 state reads");
  t.same(actorsAgain.allReminders(() => t.fail("a reminder did not parse")), [reminder, { ...reminder, id: "old" }], "current and version-0 reminders read");
  await actorsAgain.close();
});

t.test("the ledger, the journal and file metadata write the version", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-schema-ledger-"));
  // The ledger's clock is the call's time: which slot (generation % (G + 1)) an
  // entry lands in follows the clock, so the real date would pick the slot.
  const now = () => Date.parse(usage.created_at);
  const ledger = new EmbeddedLedgerStore(dir, { now });
  await ledger.append([usage]);
  await ledger.putBudget("prj_1", { monthly_limit_usd: 5, alert_thresholds: [0.5], hard_limit: true, updated_at: usage.created_at });
  await ledger.close();
  const raw = open({ path: join(dir, "billing", "ledger.lmdb"), compression: false });
  // Per-call entries are compact (tenancy/ledger-entry.ts), the schema version their last field.
  const slots = Array.from({ length: liveGenerations }, (_, i) => i);
  const entries = slots.flatMap((i) => [...raw.openDB<unknown[], string>({ name: `calls-${i}`, encoding: "msgpack" }).getRange()].map((e) => e.value));
  const budgets = raw.openDB<unknown, string>({ name: "budgets", encoding: "msgpack" });
  t.equal(entries.length, 1);
  t.equal(entries[0]?.at(-1), SCHEMA_VERSION, "a ledger entry carries its version");
  t.match(budgets.get("prj_1"), { s: SCHEMA_VERSION, v: { monthly_limit_usd: 5 } }, "so does a budget");
  // A ledger from before compact entries kept whole records in `entries`: dropped at open, counters kept.
  await raw.openDB<unknown, [string, string, number]>({ name: "entries", encoding: "msgpack" }).put(["prj_1", "2026-11", 99], { ...usage, usage_key: "old" });
  await raw.close();
  const reopened = new EmbeddedLedgerStore(dir, { now });
  t.same((await reopened.records("prj_1", "2026-11")).map((r) => r.usage_key), ["req_1"], "current entries read; whole records of before are dropped");
  t.equal(await reopened.spent("prj_1", "2026-11"), usage.cost_nanos);
  t.match(await reopened.getBudget("prj_1"), { monthly_limit_usd: 5, hard_limit: true });
  await reopened.close();

  const journalDir = join(dir, "journal");
  const journal = new UsageJournal(journalDir, createLogger("silent"));
  journal.append(usage);
  journal.close(false);
  const [segment] = readdirSync(journalDir);
  t.equal(readFileSync(join(journalDir, segment ?? ""), "utf8"), `${versionedJson(JSON.stringify(usage))}\n`, "a journal line carries its version");

  const files = await LocalFileStore.open(join(dir, "files"));
  const file = await files.put({ organizationId: "org_1", environmentId: "env_test", scope: "images", contentType: "text/plain", body: Buffer.from("hello") });
  const shard = file.id.slice(5, 7);
  const meta = readFileSync(join(dir, "files", shard, `${file.id}.json`), "utf8");
  t.equal(meta, versionedJson(JSON.stringify(file)), "file metadata carries its version");
  t.same(await files.head(file.id), file);
});

t.test("the Redis data store and ledger write the version and read version 0", async (t) => {
  const redis = await startTestRedis();
  const prefix = `schema:${process.pid}:${Date.now()}:`;
  const store = new RedisDataStore(redis.url, prefix);
  const ledger = new RedisLedgerStore(redis.url, `${prefix}bill:`);
  const client = new Redis(redis.url);
  t.teardown(async () => {
    await store.close();
    await ledger.close();
    client.disconnect();
    await redis.stop();
  });
  await store.apply([{ op: "put", key: "user:u1", value: { id: "u1" } }]);
  t.equal(await client.get(`${prefix}doc:user:u1`), `{"id":"u1","schema_version":${SCHEMA_VERSION}}`, "a document carries its version");
  await client.set(`${prefix}doc:user:old`, '{"id":"old"}');
  t.same(await store.getMany(["user:u1", "user:old"]), [{ id: "u1" }, { id: "old" }], "current and version-0 documents read");

  await ledger.append([usage]);
  const [hash] = await client.keys(`${prefix}bill:calls:*`);
  const stored = Object.values(await client.hgetall(hash ?? ""));
  t.equal(stored.length, 1);
  t.equal(stored[0]?.split(",").at(-1), String(SCHEMA_VERSION), "a ledger entry carries its version (its last field)");
  t.same((await ledger.records("prj_1", "2026-11")).map((r) => r.usage_key), ["req_1"], "and reads back");
  await ledger.putBudget("prj_1", { monthly_limit_usd: 5, alert_thresholds: [0.5], hard_limit: true, updated_at: usage.created_at });
  t.match(await client.hget(`${prefix}bill:cfg:prj_1`, "json"), /,"schema_version":1\}$/, "so does a budget");
  t.match(await ledger.getBudget("prj_1"), { monthly_limit_usd: 5 });
});
