// Troupe's own outputs as inputs, over HTTP, with no OUTBOUND_ALLOW_HOSTS:
// a speech result's URL transcribed, a generated image's URL animated by a
// video job. Both URLs name this Troupe's file route on its loopback listen
// address (or its PUBLIC_URL), which the outbound guard refuses for any
// other host: they are read from the file store, never fetched. Another
// organization's file URL is 404 not_found, exactly what an unknown id gets;
// any other path on Troupe's own host still meets the guard.
import t from "tap";
import { field, signup, startTestTroupe, str, type TestTroupe } from "../support/troupe.ts";

t.setTimeout(120_000);
const troupe = await startTestTroupe({ OUTBOUND_ALLOW_HOSTS: "", SIMULATED_VIDEO_DELAY_MS: "0" });
t.teardown(() => troupe.stop());
const alice = await signup(troupe, "own-files-a");
const bob = await signup(troupe, "own-files-b");
const port = troupe.port;

async function speechUrl(on: TestTroupe, key: string): Promise<string> {
  const r = await on.request("POST", "/v1/audio/speech", { token: key, body: { model: "simulated-speech", voice: "alto", text: "Troupe's own outputs are valid inputs." } });
  if (r.status !== 200) throw new Error(`speech: ${r.status} ${r.text}`);
  return str(r.body, "audio");
}

const transcribe = (on: TestTroupe, key: string, audioUrl: string) =>
  on.request("POST", "/v1/audio/transcriptions", { token: key, body: { model: "simulated-transcribe", audio_url: audioUrl } });

t.test("speech → its URL → transcription, without OUTBOUND_ALLOW_HOSTS", async (t) => {
  const url = await speechUrl(troupe, alice.testKey);
  t.match(url, new RegExp(`^http://127\\.0\\.0\\.1:${port}/v1/files/file_`), "the result URL is the listen address");
  const r = await transcribe(troupe, alice.testKey, url);
  t.equal(r.status, 200, r.text);
  t.ok(str(r.body, "text").length > 0, "transcribed");
  t.equal(field(r.body, "provider"), "simulated");

  // The same file under the other names of the loopback listen address, with a query the file route ignores.
  const id = url.split("/").pop()!;
  for (const other of [`http://localhost:${port}/v1/files/${id}`, `http://LOCALHOST:${port}/v1/files/${id}?download=1#x`]) {
    const again = await transcribe(troupe, alice.testKey, other);
    t.equal(again.status, 200, `${other}: ${again.text}`);
  }
});

t.test("image → its URL → image-to-video input", async (t) => {
  const img = await troupe.request("POST", "/v1/images/generations", { token: alice.testKey, body: { model: "simulated-image", prompt: "a lighthouse", size: "256x256" } });
  t.equal(img.status, 200, img.text);
  const imageUrl = str(img.body, "images", 0);
  const started = await troupe.request("POST", "/v1/video/generate", { token: alice.testKey, body: { model: "simulated-video", prompt: "the lighthouse blinks", image_url: imageUrl, duration_seconds: 1 } });
  t.equal(started.status, 202, started.text);
  const jobId = str(started.body, "job_id");
  let job: unknown;
  const deadline = Date.now() + 60_000;
  for (;;) {
    job = (await troupe.request("GET", `/v1/jobs/${jobId}`, { token: alice.testKey })).body;
    const status = field(job, "status");
    if (status === "completed" || status === "failed" || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  t.equal(field(job, "type"), "image_to_video", "the image was taken");
  t.equal(field(job, "status"), "completed", JSON.stringify(field(job, "error")));
});

t.test("another organization's file URL: 404 not_found, as for an unknown id", async (t) => {
  const url = await speechUrl(troupe, alice.testKey);
  const unknown = `http://127.0.0.1:${port}/v1/files/file_AAAAAAAAAAAAAAAAAAAAAA`;
  const theirs = await transcribe(troupe, bob.testKey, url);
  const none = await transcribe(troupe, bob.testKey, unknown);
  t.equal(theirs.status, 404, theirs.text);
  t.equal(field(theirs.body, "error", "code"), "not_found");
  t.equal(field(none.body, "error", "code"), "not_found");
  const id = url.split("/").pop()!;
  t.equal(str(theirs.body, "error", "message"), str(none.body, "error", "message").replace("file_AAAAAAAAAAAAAAAAAAAAAA", id), "the same words as an unknown id");
  t.same(field(theirs.body, "error", "details"), [{ path: "body.audio_url", message: `no file ${id}` }]);

  const img = await troupe.request("POST", "/v1/images/generations", { token: alice.testKey, body: { model: "simulated-image", prompt: "p", size: "256x256" } });
  const video = await troupe.request("POST", "/v1/video/generate", { token: bob.testKey, body: { model: "simulated-video", prompt: "p", image_url: str(img.body, "images", 0) } });
  t.equal(video.status, 404, video.text);
  t.equal(field(video.body, "error", "code"), "not_found");
  t.same((await troupe.request("GET", "/v1/jobs", { token: bob.testKey })).body, { data: [], next_cursor: null }, "no job started");

  t.equal((await fetch(url)).status, 200, "the file is there: the refusal is the organization's, not the file's");
  t.equal((await transcribe(troupe, alice.testKey, url)).status, 200, "its own organization still uses it");
});

t.test("an own file of the wrong type: 400 naming the field, as a download of it would be", async (t) => {
  const img = await troupe.request("POST", "/v1/images/generations", { token: alice.testKey, body: { model: "simulated-image", prompt: "p", size: "256x256" } });
  const r = await transcribe(troupe, alice.testKey, str(img.body, "images", 0));
  t.equal(r.status, 400, r.text);
  t.equal(field(r.body, "error", "code"), "invalid_request");
  t.match(str(r.body, "error", "message"), /^audio_url cannot be used: the URL's content type image\/png is not one of audio\//);
  t.match(field(r.body, "error", "details"), [{ path: "body.audio_url", reason: "content_type" }]);
});

t.test("any other path on Troupe's own host is still the outbound guard's", async (t) => {
  const id = (await speechUrl(troupe, alice.testKey)).split("/").pop()!;
  for (const url of [
    `http://127.0.0.1:${port}/v1/models`,
    `http://127.0.0.1:${port}/healthz`,
    `http://127.0.0.1:${port}/v1/files/${id}/more`,
    `http://localhost:${port}/v1/openapi.json`,
    // Credentials in the URL: never taken for ours.
    `http://user:pw@127.0.0.1:${port}/v1/files/${id}`,
    // Another port of the same host is another server.
    `http://127.0.0.1:${port === 65535 ? port - 1 : port + 1}/v1/files/${id}`,
  ]) {
    const r = await transcribe(troupe, alice.testKey, url);
    t.equal(r.status, 400, `${url}: ${r.text}`);
    t.equal(field(r.body, "error", "code"), "invalid_request");
    t.match(str(r.body, "error", "message"), /non-public address|credentials are not allowed/, url);
  }
});

t.test("PUBLIC_URL: its file URLs are read from the store, never resolved or fetched", async (t) => {
  // troupe.invalid never resolves: a fetch would fail with "does not resolve".
  const behind = await startTestTroupe({ OUTBOUND_ALLOW_HOSTS: "", PUBLIC_URL: "https://troupe.invalid/base/" });
  t.teardown(() => behind.stop());
  const user = await signup(behind, "own-files-public");
  const url = await speechUrl(behind, user.testKey);
  t.match(url, /^https:\/\/troupe\.invalid\/base\/v1\/files\/file_/);
  const r = await transcribe(behind, user.testKey, url);
  t.equal(r.status, 200, r.text);
  const listen = await transcribe(behind, user.testKey, `http://127.0.0.1:${behind.port}/v1/files/${url.split("/").pop()!}`);
  t.equal(listen.status, 200, `the listen address still names the file: ${listen.text}`);
  const outside = await transcribe(behind, user.testKey, `https://troupe.invalid/v1/files/${url.split("/").pop()!}`);
  t.equal(outside.status, 400, "outside PUBLIC_URL's path it is just another URL");
  t.match(str(outside.body, "error", "message"), /does not resolve/);
});
