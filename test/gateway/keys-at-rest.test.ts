// No byte sequence of any full key is stored anywhere: not in the data
// directory (embedded) and not in Redis. A planted copy proves the scan
// would find a key if one were there.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import t from "tap";
import { startTestRedis } from "../support/redis.ts";
import { signup, startTestTroupe, str, type TestTroupe } from "../support/troupe.ts";

async function makeKeys(troupe: TestTroupe): Promise<string[]> {
  const user = await signup(troupe, "rest");
  const keys = [user.testKey];
  for (const live of [true, false]) {
    const res = await troupe.request("POST", `/v1/environments/${user.productionEnvId}/api-keys`, { token: user.token, body: { name: `k-${live}`, live } });
    keys.push(str(res.body, "key"));
  }
  const env = await troupe.request("POST", `/v1/projects/${user.projectId}/environments`, { token: user.token, body: { name: "qa" } });
  keys.push(str(env.body, "test_key", "key"));
  // Use each key once so last_used_at and caches are written too.
  for (const key of keys) await troupe.request("GET", "/v1/models", { token: key });
  return keys;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** The secret part of a key (after `trp_live_`/`trp_test_`; it may itself contain `_`), as text and as raw bytes. */
function needles(key: string): Buffer[] {
  const secret = key.replace(/^trp_(?:live|test)_/, "");
  if (secret.length < 32) throw new Error(`unexpected key shape: ${key.slice(0, 12)}…`);
  return [Buffer.from(key), Buffer.from(secret), Buffer.from(secret, "base64url")];
}

function scan(files: string[], keys: string[]): string[] {
  const found: string[] = [];
  for (const file of files) {
    const bytes = readFileSync(file);
    for (const key of keys) for (const needle of needles(key)) if (bytes.includes(needle)) found.push(`${file} contains ${key.slice(0, 12)}…`);
  }
  return found;
}

t.test("embedded: the data directory holds no key bytes", async (t) => {
  const troupe = await startTestTroupe();
  const keys = await makeKeys(troupe);
  await troupe.stop();
  const files = filesUnder(troupe.dataDir);
  t.ok(files.length > 0, "the data directory has files to scan");
  t.same(scan(files, keys), []);
  const planted = join(troupe.dataDir, "planted.bin");
  writeFileSync(planted, Buffer.concat([Buffer.from("xx"), Buffer.from(keys[0] ?? ""), Buffer.from("yy")]));
  t.equal(scan([planted], keys).length >= 1, true, "the scan finds a key that is there");
});

t.test("redis: no key bytes in any value", async (t) => {
  const redis = await startTestRedis();
  const troupe = await startTestTroupe({ REDIS_URL: redis.url });
  const keys = await makeKeys(troupe);
  const client = new Redis(redis.url);
  const dumped: Buffer[] = [];
  for (const k of await client.keys("*")) {
    dumped.push(Buffer.from(k));
    const type = await client.type(k);
    if (type === "string") dumped.push((await client.getBuffer(k)) ?? Buffer.alloc(0));
    else if (type === "zset") dumped.push(Buffer.from((await client.zrange(k, 0, -1)).join("\n")));
  }
  t.ok(dumped.length > 10, `scanned ${dumped.length} redis entries`);
  const all = Buffer.concat(dumped);
  const found = keys.filter((key) => needles(key).some((n) => all.includes(n)));
  t.same(found, []);
  await client.quit();
  await troupe.stop();
  await redis.stop();
});
