// A key create refused by API_KEYS_PER_PROJECT writes nothing:
// 20 creates, each with its own monthly budget, race over real HTTP for the
// last of 3 places; exactly one is answered 201, and reading the stores
// straight (every lmdb record under the data directory, or every Redis key)
// finds no key id but the answered ones: no loser's budget row in the ledger,
// no record, index entry or slot in the data store. On lmdb and on Redis.
// And a key whose budget cannot be written is removed again, freeing its place:
// its slot's holder document no longer names it but marks the slot released,
// and creates racing for that place take it exactly once.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import type { Test } from "tap";
import { Redis } from "ioredis";
import { open } from "lmdb";
import { releasedHolder } from "../../core/quota-slots.ts";
import { keys, quotaScopes } from "../../tenancy/records.ts";
import { startTestRedis } from "../support/redis.ts";
import { field, signup, startTestTroupe, str, type TestTroupe } from "../support/troupe.ts";

const keyId = /key_[0-9A-HJKMNP-TV-Z]{26}/g;

/** One stored record as text: where it is, its key and its value. */
interface StoredText {
  where: string;
  text: string;
}

/** Every record of every lmdb database under the data directory, keys and values as latin1 text. */
function lmdbRecords(dataDir: string): StoredText[] {
  const out: StoredText[] = [];
  for (const name of readdirSync(dataDir, { recursive: true, encoding: "utf8" })) {
    const path = join(dataDir, name);
    if (!statSync(path).isFile() || !/\.(mdb|lmdb)$/.test(name)) continue;
    const root = open({ path, readOnly: true, encoding: "binary", keyEncoding: "binary" });
    try {
      const dbNames = [...root.getRange()].map(({ key }) => Buffer.from(key as Uint8Array).toString("utf8"));
      for (const dbName of dbNames) {
        const db = root.openDB({ name: dbName, encoding: "binary", keyEncoding: "binary" });
        for (const { key, value } of db.getRange()) {
          out.push({ where: `${name}: ${dbName.replace(/\0+$/, "")}`, text: Buffer.concat([Buffer.from(key as Uint8Array), Buffer.from(value as Uint8Array)]).toString("latin1") });
        }
      }
    } finally {
      void root.close();
    }
  }
  return out;
}

/** Every Redis key with its value, whatever its type. */
async function redisRecords(url: string): Promise<StoredText[]> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
  try {
    const out: StoredText[] = [];
    let cursor = "0";
    do {
      const [next, names] = await redis.scan(cursor, "COUNT", 1000);
      cursor = next;
      for (const name of names) {
        const type = await redis.type(name);
        let value: unknown;
        if (type === "string") value = await redis.get(name);
        else if (type === "zset") value = await redis.zrange(name, 0, -1);
        else if (type === "hash") value = await redis.hgetall(name);
        out.push({ where: `redis ${type} ${name}`, text: `${name} ${JSON.stringify(value)}` });
      }
    } while (cursor !== "0");
    return out;
  } finally {
    redis.disconnect();
  }
}

/** The key ids in the records naming the project or one of its environments (a shared Redis holds other tests' keys too). */
function keyIdsOf(records: StoredText[], needles: string[]): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const record of records) {
    if (!needles.some((n) => record.text.includes(n))) continue;
    for (const id of record.text.match(keyId) ?? []) found.set(id, [...(found.get(id) ?? []), record.where]);
  }
  return found;
}

async function lastPlaceRace(t: Test, troupe: TestTroupe, records: () => Promise<StoredText[]>, budgetRow: (record: StoredText, projectId: string) => boolean) {
  const user = await signup(troupe, "key-budget-race");
  const path = `/v1/environments/${user.productionEnvId}/api-keys`;
  const create = () => troupe.request("POST", path, { token: user.token, body: { name: "budgeted", monthly_budget_usd: 5 } });
  const answered = [str(user.body, "environments", 1, "test_key", "id")];
  for (let i = 0; i < 2; i++) {
    const res = await create();
    t.equal(res.status, 201, res.text);
    answered.push(str(res.body, "id"));
  }
  const racing = await Promise.all(Array.from({ length: 20 }, create));
  const won = racing.filter((res) => res.status === 201);
  t.equal(won.length, 1, "exactly one of 20 creates took the last place");
  t.same(racing.filter((res) => res.status !== 201).map((res) => [res.status, field(res.body, "error", "code")]), Array.from({ length: 19 }, () => [403, "quota_exceeded"]), "the others are 403 quota_exceeded");
  answered.push(...won.map((res) => str(res.body, "id")));

  const stored = await records();
  const found = keyIdsOf(stored, [user.projectId, user.productionEnvId, user.developmentEnvId]);
  t.same([...found.keys()].filter((id) => !answered.includes(id)), [], "no key id but the answered ones is stored anywhere");
  t.same([...found.keys()].sort(), [...answered].sort(), "each answered key is stored");
  const budgetRows = stored.filter((record) => budgetRow(record, user.projectId));
  t.same(budgetRows.map((r) => r.text.match(keyId)?.[0]).sort(), answered.slice(1).sort(), "one budget row per member-made key, none for a refused create");
}

t.test("lmdb: a refused create leaves no budget row, record or index entry", async (t) => {
  const troupe = await startTestTroupe({ API_KEYS_PER_PROJECT: "3" });
  t.teardown(() => troupe.stop());
  // The embedded ledger's budgets database: `<project>\t<key>` → the budget.
  await lastPlaceRace(t, troupe, async () => lmdbRecords(troupe.dataDir), (record, projectId) => record.where.endsWith(": budgets") && record.text.startsWith(`${projectId}\t`));
});

t.test("Redis: a refused create leaves no budget row, record or index entry", async (t) => {
  const redis = await startTestRedis();
  const troupe = await startTestTroupe({ API_KEYS_PER_PROJECT: "3", REDIS_URL: redis.url });
  t.teardown(async () => {
    await troupe.stop();
    await redis.stop();
  });
  // The Redis ledger's key budgets: troupe:bill:kcfg:<project>:<key>.
  await lastPlaceRace(t, troupe, () => redisRecords(redis.url), (record, projectId) => record.where.includes(` troupe:bill:kcfg:${projectId}:`));
});

t.test("a key whose budget cannot be written is removed and its place is free again", async (t) => {
  const troupe = await startTestTroupe({ API_KEYS_PER_PROJECT: "1" });
  t.teardown(() => troupe.stop());
  const user = await signup(troupe, "key-budget-failure");
  const session = await troupe.request("GET", "/v1/account", { token: user.token });
  const userId = str(session.body, "user", "id");
  const apiKeys = troupe.services.apiKeys;
  const input = { name: "budgeted", scopes: [], live: false, monthly_budget_usd: 5 };
  const failing = { putBudget: () => Promise.reject(new Error("ledger unavailable")) };
  await t.rejects(apiKeys.create(userId, user.developmentEnvId, input, failing), /ledger unavailable/);
  const listed = await troupe.request("GET", `/v1/environments/${user.developmentEnvId}/api-keys?limit=100`, { token: user.token });
  t.same((field(listed.body, "data") as { name: string }[]).filter((k) => k.name === "budgeted"), [], "the key is not listed");
  const next = await troupe.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body: { name: "next", monthly_budget_usd: 5 } });
  t.equal(next.status, 201, `the one place is free again: ${next.text}`);
});

t.test("a discarded key's slot holder marks the slot released, and racing creates take that place once", async (t) => {
  const troupe = await startTestTroupe({ API_KEYS_PER_PROJECT: "1" });
  t.teardown(() => troupe.stop());
  const user = await signup(troupe, "key-budget-holder");
  const session = await troupe.request("GET", "/v1/account", { token: user.token });
  const input = { name: "budgeted", scopes: [], live: false, monthly_budget_usd: 5 };
  const failing = { putBudget: () => Promise.reject(new Error("ledger unavailable")) };
  await t.rejects(troupe.services.apiKeys.create(str(session.body, "user", "id"), user.developmentEnvId, input, failing), /ledger unavailable/);

  // The one slot (0) was empty: the failed create took it by the turn from no holder, which names it.
  const store = troupe.services.store;
  const scope = quotaScopes.apiKeys(user.projectId);
  const discarded = await store.lookup(`quota-turn:${scope}:0:-`);
  t.match(discarded, /^key_/, "the failed create took slot 0");
  t.equal(await store.get(keys.apiKey(discarded ?? "")), undefined, "its record is gone");
  t.equal(await store.get(`quota-holder:${scope}:0`), releasedHolder(discarded ?? ""), "the slot's holder document no longer names the key: it marks the slot released");

  const path = `/v1/environments/${user.productionEnvId}/api-keys`;
  const racing = await Promise.all(Array.from({ length: 10 }, () => troupe.request("POST", path, { token: user.token, body: { name: "next", monthly_budget_usd: 5 } })));
  const won = racing.filter((res) => res.status === 201);
  t.equal(won.length, 1, `exactly one of 10 creates took the place: ${JSON.stringify(racing.map((res) => res.status))}`);
  t.equal(await store.get(`quota-holder:${scope}:0`), str(won[0]?.body, "id"), "and holds it");
});
