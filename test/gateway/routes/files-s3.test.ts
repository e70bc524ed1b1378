// Distributed mode's file promise, in-process: two Troupes on the same S3
// bucket (a real MinIO) and separate data directories — a speech file and
// images made through one are served, with ranges, by the other (which
// shares nothing else with it: file URLs need no credentials).
import t from "tap";
import { randomUUID } from "node:crypto";
import { imageInfo } from "../../../media/png.ts";
import { testS3 } from "../../support/minio.ts";
import { field, signup, startTestTroupe } from "../../support/troupe.ts";

t.setTimeout(120_000);
const s3 = testS3(`troupe-replicas-${randomUUID().slice(0, 8)}`);
if (typeof s3 === "string") {
  t.plan(0, s3);
} else {
  t.teardown(() => s3.stop());
  t.test("any replica serves any file", async (t) => {
    const a = await startTestTroupe(s3.env);
    const b = await startTestTroupe(s3.env);
    t.teardown(async () => {
      await a.stop();
      await b.stop();
    });
    const user = await signup(a, "replicas");
    const speech = await a.request("POST", "/v1/audio/speech", { token: user.testKey, body: { text: "Stored in the bucket.", voice: "soprano" } });
    t.equal(speech.status, 200, speech.text);
    const id = String(field(speech.body, "audio")).split("/").pop()!;
    const whole = await fetch(`${b.url}/v1/files/${id}`);
    t.equal(whole.status, 200);
    t.equal(whole.headers.get("content-type"), "audio/wav");
    const bytes = Buffer.from(await whole.arrayBuffer());
    t.equal(bytes.subarray(0, 4).toString(), "RIFF");
    const part = await fetch(`${b.url}/v1/files/${id}`, { headers: { range: "bytes=8-11" } });
    t.equal(part.status, 206);
    t.equal(Buffer.from(await part.arrayBuffer()).toString(), "WAVE");
    const images = await a.request("POST", "/v1/images/generations", { token: user.testKey, body: { prompt: "x", size: "256x256", n: 2 } });
    t.equal(images.status, 200, images.text);
    for (const url of field(images.body, "images") as string[]) {
      const res = await fetch(`${b.url}/v1/files/${url.split("/").pop()}`);
      t.same(imageInfo(Buffer.from(await res.arrayBuffer())), { format: "png", width: 256, height: 256 });
    }
    t.equal((await fetch(`${b.url}/v1/files/file_AAAAAAAAAAAAAAAAAAAAAA`)).status, 404);
  });
}
