// DELETE /v1/orgs/{id} in the distributed mode: the data store and the ledger
// on Redis, vectors on Elasticsearch, files on S3 (MinIO), two replicas.
// Afterwards every Redis key and value, every document of Troupe's
// Elasticsearch index and every object of the bucket is read straight:
// nothing of the organization is left but the usage ledger's records (which
// hold no content) and rate-limit counters that expire within their minute.
// Never skipped under CI: .ci/run sets REDIS_URL, ELASTICSEARCH_URL and S3_*.
import t from "tap";
import { randomUUID } from "node:crypto";
import { testS3 } from "../support/minio.ts";
import { startTestRedis } from "../support/redis.ts";
import { scanElasticsearch, scanRedis, scanS3 } from "../support/distributed-scan.ts";
import { populate, scanLmdb, scanPlainFiles } from "../support/org-footprint.ts";
import { field, signup, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(180_000);
const esUrl = process.env["ELASTICSEARCH_URL"];
// Elasticsearch is asked for first: a MinIO started for a file that then skips would be left running.
const s3 = esUrl ? testS3(`troupe-orgdel-${randomUUID().slice(0, 8)}`) : undefined;
const missing = !esUrl ? "ELASTICSEARCH_URL is not set: start one with `npm run elasticsearch` and export the URL it prints" : typeof s3 === "string" ? s3 : undefined;
if (missing !== undefined) {
  if (process.env["CI"] === "true") throw new Error(missing);
  t.plan(0, missing);
} else if (s3 !== undefined && typeof s3 !== "string" && esUrl) {
  t.teardown(() => s3.stop());
  t.test("nothing of a deleted organization is left in Redis, Elasticsearch or S3", async (t) => {
    const redis = await startTestRedis();
    const index = `troupe-orgdel-${randomUUID().slice(0, 8)}`;
    const env = { ...s3.env, REDIS_URL: redis.url, ELASTICSEARCH_URL: esUrl, ELASTICSEARCH_INDEX: index, OUTBOUND_ALLOW_HOSTS: "127.0.0.1" };
    const a = await startTestTroupe(env);
    const b = await startTestTroupe(env);
    let stopped = false;
    const stopAll = async () => {
      if (stopped) return;
      stopped = true;
      await a.stop();
      await b.stop();
    };
    t.teardown(async () => {
      await stopAll();
      await fetch(`${esUrl}/${index}`, { method: "DELETE" }).catch(() => undefined);
      await redis.stop();
    });
    const owner = await signup(a, "doomed-distributed");
    const other = await signup(a, "bystander-distributed");
    const marker = `MARK${randomUUID().replaceAll("-", "")}`;
    const footprint = await populate(a.request, owner, marker);
    const otherMarker = `MARK${randomUUID().replaceAll("-", "")}`;
    await populate(a.request, other, otherMarker);
    t.equal((await b.request("GET", "/v1/models", { token: owner.testKey })).status, 200, "the other replica knows the key");

    const orgName = String(field((await a.request("GET", `/v1/orgs/${owner.orgId}`, { token: owner.token })).body, "name"));
    const done = await a.request("DELETE", `/v1/orgs/${owner.orgId}`, { token: owner.token, body: { confirm: orgName } });
    t.equal(done.status, 200, done.text);
    t.equal((await b.request("GET", "/v1/models", { token: owner.testKey })).status, 401, "refused on the other replica (revocation broadcast)");
    for (const id of footprint.fileIds) t.equal((await fetch(`${b.url}/v1/files/${id}`)).status, 404, "its files are 404 on the other replica");
    await stopAll();

    const redisHits = await scanRedis(redis.url, footprint.needles);
    const ledger = (h: { where: string }) => h.where.includes(" troupe:bill:");
    // Rate-limit windows are named by key id and hold only a count: they expire with their minute.
    const counters = redisHits.filter((h) => / troupe:rl:/.test(h.where));
    for (const c of counters) t.ok(c.ttlMs > 0 && c.ttlMs <= 60_000, `${c.where} expires within its minute`);
    t.same(redisHits.filter((h) => !ledger(h) && !counters.includes(h)), [], "nothing in Redis outside the usage ledger");
    t.same(redisHits.filter((h) => h.needle === marker), [], "no content in Redis, the ledger included");
    t.same(await scanElasticsearch(esUrl, `${index}*`, footprint.needles), [], "nothing in Elasticsearch");
    t.same(await scanS3(s3.settings, footprint.needles), [], "nothing in the bucket");
    for (const dir of [a.dataDir, b.dataDir]) {
      t.same([...scanLmdb(dir, footprint.needles), ...scanPlainFiles(dir, footprint.needles)].filter((h) => !/^usage-journal/.test(h.where)), [], `nothing in ${dir}`);
    }
    // The scans see an organization that was not deleted.
    t.ok((await scanRedis(redis.url, [otherMarker])).length > 0, "Redis holds the bystander's records");
    t.ok((await scanElasticsearch(esUrl, `${index}*`, [otherMarker])).length > 0, "Elasticsearch holds the bystander's vectors");
    t.ok((await scanS3(s3.settings, [other.orgId])).length > 0, "the bucket holds the bystander's files");
  });
}
