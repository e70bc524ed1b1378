// DELETE /v1/files/{id} in the distributed mode: two Troupes on one bucket (a
// real MinIO) and one Redis. A file deleted through one is 404 through the
// other, and the object is gone from the bucket itself.
import t from "tap";
import { randomUUID } from "node:crypto";
import { testS3 } from "../../support/minio.ts";
import { startTestRedis } from "../../support/redis.ts";
import { listS3Objects } from "../../support/s3-objects.ts";
import { signup, startTestTroupe, str } from "../../support/troupe.ts";

t.setTimeout(120_000);
const s3 = testS3(`troupe-delete-${randomUUID().slice(0, 8)}`);
if (typeof s3 === "string") {
  t.plan(0, s3);
} else {
  t.teardown(() => s3.stop());
  t.test("deleted through one replica: 404 on the other, no object left in the bucket", async (t) => {
    const redis = await startTestRedis();
    const env = { ...s3.env, REDIS_URL: redis.url };
    const a = await startTestTroupe(env);
    const b = await startTestTroupe(env);
    t.teardown(async () => {
      await a.stop();
      await b.stop();
      await redis.stop();
    });
    const owner = await signup(a, "s3-delete");
    const stranger = await signup(a, "s3-stranger");
    const speech = await a.request("POST", "/v1/audio/speech", { token: owner.testKey, body: { text: "In the bucket.", voice: "soprano" } });
    t.equal(speech.status, 200, speech.text);
    const id = str(speech.body, "audio").split("/").pop()!;
    t.equal((await fetch(`${b.url}/v1/files/${id}`)).status, 200, "served by the other replica");
    t.ok((await listS3Objects(s3.settings)).some((o) => o.key.includes(id)), "the object is in the bucket");
    t.equal((await b.request("DELETE", `/v1/files/${id}`, { token: stranger.testKey })).status, 404, "another organization");
    const res = await b.request("DELETE", `/v1/files/${id}`, { token: owner.testKey });
    t.equal(res.status, 200, res.text);
    t.equal((await fetch(`${a.url}/v1/files/${id}`)).status, 404, "404 on the replica that stored it");
    t.equal((await fetch(`${b.url}/v1/files/${id}`)).status, 404, "404 on the replica that deleted it");
    t.same((await listS3Objects(s3.settings)).filter((o) => o.key.includes(id)), [], "no object left in the bucket");
  });
}
