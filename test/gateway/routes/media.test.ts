// Speech, transcription and images end to end over HTTP, through the real
// app wiring, for each provider's fake and the simulated provider: stored
// files that ffprobe reads as audio with a duration, PNG/JPEG of the
// requested size, no provider URL or host in any response, files still
// served after the fakes' URLs expire and after a restart; bad input is a
// clear 4xx/502 and leaves nothing stored.
import t, { type Test } from "tap";
import { execFileSync } from "node:child_process";
import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { imageInfo } from "../../../media/png.ts";
import type { LocalFileStore } from "../../../media/local-file-store.ts";
import type { UsageRecord } from "../../../providers/usage.ts";
import { startMediaFake } from "../../fakes/media-fakes.ts";
import { field, signup, startTestTroupe, type TestTroupe } from "../../support/troupe.ts";

t.setTimeout(120_000);
const fake = await startMediaFake({ openaiKey: "sk-o", elevenlabsKey: "xi-e", stabilityKey: "sk-s", bflKey: "bfl-k" });
const env = {
  OPENAI_API_KEY: "sk-o",
  OPENAI_BASE_URL: `${fake.url}/v1`,
  ELEVENLABS_API_KEY: "xi-e",
  ELEVENLABS_BASE_URL: fake.url,
  STABILITY_API_KEY: "sk-s",
  STABILITY_BASE_URL: fake.url,
  BFL_API_KEY: "bfl-k",
  BFL_BASE_URL: fake.url,
  BFL_POLL_INTERVAL_MS: "20",
  OUTBOUND_ALLOW_HOSTS: "127.0.0.1",
  PROVIDER_MAX_ATTEMPTS: "2",
  PROVIDER_TIMEOUT_MS: "10000",
  MEDIA_MAX_DOWNLOAD_BYTES: "2000000",
  MEDIA_DOWNLOAD_TIMEOUT_MS: "1500",
};
const usage: UsageRecord[] = [];
let troupe: TestTroupe = await startTestTroupe(env, { usage: { record: (u) => void usage.push(u) } });
const user = await signup(troupe, "media");
t.teardown(async () => {
  await troupe.stop();
  await fake.close();
});
const post = (path: string, body: unknown) => troupe.request("POST", path, { token: user.testKey, body });
const fakePort = new URL(fake.url).port;
const storedCount = async () => (await (troupe.services.files.backend as LocalFileStore).list()).length;

async function download(url: string): Promise<Buffer> {
  t.ok(url.startsWith(troupe.url + "/v1/files/file_"), `${url} is a Troupe file URL`);
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

function probe(bytes: Buffer): { codec_type: string; duration: number } {
  const file = join(mkdtempSync(join(tmpdir(), "probe-")), "a");
  writeFileSync(file, bytes);
  const out = execFileSync("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type:format=duration", "-of", "json", file], { encoding: "utf8" });
  const parsed = JSON.parse(out) as { streams: { codec_type: string }[]; format: { duration: string } };
  return { codec_type: parsed.streams[0]!.codec_type, duration: Number(parsed.format.duration) };
}

function noProviderTrace(t: Test, text: string): void {
  t.notMatch(text, fakePort, "no provider port");
  t.notMatch(text, "/tmp/", "no provider temporary URL");
  t.notMatch(text, "sig=", "no provider signature");
}

const storedUrls: string[] = [];

t.test("speech: each provider's audio is stored and ffprobe reads it", async (t) => {
  for (const [model, voice, provider] of [
    ["simulated-speech", "alto", "simulated"],
    ["tts-1", "nova", "openai"],
    ["eleven_multilingual_v2", "rachel", "elevenlabs"],
  ] as const) {
    const r = await post("/v1/audio/speech", { text: "Hello from Troupe, this is a test of speech.", voice, model });
    t.equal(r.status, 200, r.text);
    t.equal(field(r.body, "model"), model);
    t.equal(field(r.body, "provider"), provider);
    noProviderTrace(t, r.text);
    const audio = await download(String(field(r.body, "audio")));
    const p = probe(audio);
    t.equal(p.codec_type, "audio", `${provider}: an audio stream`);
    t.ok(p.duration > 0.2, `${provider}: a duration (${p.duration} s)`);
    storedUrls.push(String(field(r.body, "audio")));
  }
  const el = fake.calls.find((c) => c.path.startsWith("/v1/text-to-speech/"));
  t.match(el?.path, /^\/v1\/text-to-speech\/21m00Tcm4TlvDq8ikWAM\?output_format=mp3_44100_128$/, "voice name mapped to the voice id");
  t.same(el?.json, { text: "Hello from Troupe, this is a test of speech.", model_id: "eleven_multilingual_v2" });
  const short = await post("/v1/audio/speech", { text: "Hi there.", voice: "bass", model: "simulated-speech" });
  const long = await post("/v1/audio/speech", { text: "word ".repeat(60), voice: "bass", model: "simulated-speech" });
  const shortS = probe(await download(String(field(short.body, "audio")))).duration;
  const longS = probe(await download(String(field(long.body, "audio")))).duration;
  t.ok(longS > shortS * 5, `the simulated audio's length follows the text (${shortS} s vs ${longS} s)`);
  const u = usage.find((x) => x.model === "tts-1");
  t.equal(u?.units, 44, "priced per character");
  t.equal(u?.category, "audio");
});

t.test("speech: voices per model, routing by voice", async (t) => {
  const before = await storedCount();
  const wrong = await post("/v1/audio/speech", { text: "x", voice: "rachel", model: "tts-1" });
  t.equal(wrong.status, 400);
  t.match(String(field(wrong.body, "error", "message")), /tts-1 has no voice "rachel"; its voices: alloy, ash/);
  const none = await post("/v1/audio/speech", { text: "x", voice: "nobody" });
  t.equal(none.status, 400);
  t.match(String(field(none.body, "error", "message")), /no model has the voice "nobody"/);
  t.equal(await storedCount(), before, "nothing stored");
  const byVoice = await post("/v1/audio/speech", { text: "x", voice: "josh", model: null });
  t.equal(byVoice.status, 200, byVoice.text);
  t.equal(field(byVoice.body, "provider"), "elevenlabs", "only models with the voice are considered");
  const listed = await troupe.request("GET", "/v1/models?category=audio", { token: user.testKey });
  const ids = (field(listed.body, "data") as { id: string; capabilities: { voices?: string[] }; available: boolean }[]);
  t.ok(ids.find((m) => m.id === "tts-1")?.capabilities.voices?.includes("nova"), "voices listed per model");
  t.equal(ids.find((m) => m.id === "eleven_flash_v2_5")?.available, true);
});

t.test("images: each provider's n images re-hosted at the requested size", async (t) => {
  for (const [model, size, n, provider] of [
    ["simulated-image", "512x512", 3, "simulated"],
    ["dall-e-3", "1024x1792", 2, "openai"],
    ["gpt-image-1", "1024x1024", 2, "openai"],
    ["stable-image-core", "1344x768", 2, "stability"],
    ["flux-pro-1.1", "1024x768", 2, "bfl"],
  ] as const) {
    const r = await post("/v1/images/generations", { prompt: "a lighthouse", model, size, n });
    t.equal(r.status, 200, `${model}: ${r.text}`);
    t.equal(field(r.body, "provider"), provider);
    noProviderTrace(t, r.text);
    const urls = field(r.body, "images") as string[];
    t.equal(urls.length, n, `${model}: n images`);
    t.equal(new Set(urls).size, n);
    for (const url of urls) {
      const info = imageInfo(await download(url));
      t.equal(info?.format, "png");
      t.equal(`${info?.width}x${info?.height}`, size, `${model}: requested size`);
      storedUrls.push(url);
    }
  }
  const dalle = fake.calls.filter((c) => c.path === "/v1/images/generations" && (c.json as { model: string }).model === "dall-e-3");
  t.equal(dalle.length, 2, "one-image-per-call model called n times");
  const polls = fake.calls.filter((c) => c.path.startsWith("/v1/get_result"));
  t.ok(polls.length >= 4, "BFL polled until Ready");
  const u = usage.find((x) => x.model === "simulated-image");
  t.equal(u?.units, (3 * 512 * 512) / 1e6, "priced per megapixel");
});

t.test("images: n and size checked against the model before any call", async (t) => {
  const before = await storedCount();
  const calls = fake.calls.length;
  for (const n of [0, 5]) {
    const r = await post("/v1/images/generations", { prompt: "x", model: "dall-e-3", n });
    t.equal(r.status, 400, `n=${n}`);
  }
  const size = await post("/v1/images/generations", { prompt: "x", model: "dall-e-3", size: "512x512" });
  t.equal(size.status, 400);
  t.match(String(field(size.body, "error", "message")), /dall-e-3 does not make 512x512 images; its sizes: 1024x1024, 1792x1024, 1024x1792/);
  t.equal((await post("/v1/images/generations", { prompt: "x", size: "big" })).status, 400);
  t.equal(fake.calls.length, calls, "no provider call");
  t.equal(await storedCount(), before);
});

t.test("transcription: each provider answers the fake's text", async (t) => {
  const speech = await post("/v1/audio/speech", { text: "Something to transcribe here.", voice: "alto", model: "simulated-speech" });
  const audioUrl = String(field(speech.body, "audio"));
  for (const [model, provider] of [["whisper-1", "openai"], ["scribe_v1", "elevenlabs"]] as const) {
    const r = await post("/v1/audio/transcriptions", { audio_url: audioUrl, language: "en", model });
    t.equal(r.status, 200, r.text);
    t.same(r.body, { text: "the quick brown fox", model, provider });
  }
  const oa = fake.calls.find((c) => c.path === "/v1/audio/transcriptions");
  t.equal(oa?.fields?.["model"], "whisper-1");
  t.equal(oa?.fields?.["language"], "en");
  t.equal(oa?.files?.["file"]?.subarray(0, 4).toString(), "RIFF", "the downloaded audio was uploaded");
  const sim = await post("/v1/audio/transcriptions", { audio_url: audioUrl, model: "simulated-transcribe" });
  t.equal(sim.status, 200);
  t.equal(field(sim.body, "provider"), "simulated");
  const u = usage.find((x) => x.model === "simulated-transcribe");
  t.ok(Math.abs((u?.units ?? 0) - 29 / 15) < 0.01, "priced per second of audio (the WAV's duration)");
});

t.test("bad URLs and provider failures: clear 4xx/502, nothing half-stored", async (t) => {
  const before = await storedCount();
  const bad = async (audio_url: string, pattern: RegExp) => {
    const r = await post("/v1/audio/transcriptions", { audio_url, model: "whisper-1" });
    t.equal(r.status, 400, `${audio_url}: ${r.text}`);
    t.equal(field(r.body, "error", "code"), "invalid_request");
    t.match(String(field(r.body, "error", "message")), pattern);
  };
  await bad("not a url", /not a valid URL/);
  await bad(`http://127.0.0.2:${fakePort}/x`, /non-public/);
  await bad("http://169.254.169.254/latest/meta-data/", /non-public/);
  const speech = await post("/v1/audio/speech", { text: "x", voice: "alto", model: "simulated-speech" });
  const mine = String(field(speech.body, "audio"));
  fake.downloadFaults.push({ kind: "redirect", to: "http://169.254.169.254/latest/" });
  const tmp = await post("/v1/images/generations", { prompt: "p", model: "dall-e-3" });
  t.equal(tmp.status, 502, "a provider URL redirecting to metadata is refused");
  noProviderTrace(t, tmp.text);
  t.equal((await post("/v1/audio/transcriptions", { audio_url: mine, model: "whisper-1" })).status, 200, "an allowed URL passes");
  // An audio file over MEDIA_MAX_DOWNLOAD_BYTES (2 MB here).
  const big = await troupe.services.files.put({ body: Buffer.alloc(3_000_000), contentType: "audio/wav", organizationId: user.orgId, environmentId: "env_test", scope: "images" });
  await bad(troupe.services.media.fileUrl(big.id), /exceeds the limit of 2000000 bytes/);
  const count = await storedCount();

  fake.downloadFaults.push({ kind: "oversized", bytes: 5_000_000 });
  const over = await post("/v1/images/generations", { prompt: "p", model: "dall-e-3" });
  t.equal(over.status, 502);
  t.match(String(field(over.body, "error", "message")), /exceeds the download size limit/);

  fake.downloadFaults.push({ kind: "slow", bytesPerSecond: 100 });
  const slow = await post("/v1/images/generations", { prompt: "p", model: "dall-e-3" });
  t.equal(slow.status, 502);
  t.match(String(field(slow.body, "error", "message")), /did not finish in time/);

  // The second of two images fails to copy: the first, already stored, is deleted.
  fake.downloadFaults.push({ kind: "status", status: 500 });
  const half = await post("/v1/images/generations", { prompt: "p", model: "dall-e-3", n: 2 });
  t.equal(half.status, 502);
  noProviderTrace(t, half.text);

  fake.apiFaults.push(503, 503);
  const down = await post("/v1/audio/speech", { text: "x", voice: "nova", model: "tts-1", routing_strategy: "manual" });
  t.equal(down.status, 502);
  t.equal(field(down.body, "error", "code"), "provider_error");
  t.equal(await storedCount(), count, "nothing stored by the failed requests");
  t.ok(count >= before);
});

t.test("scopes: audio and images", async (t) => {
  const created = await troupe.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body: { name: "audio only", scopes: ["audio"], live: false } });
  t.equal(created.status, 201, created.text);
  const key = String(field(created.body, "key"));
  const img = await troupe.request("POST", "/v1/images/generations", { token: key, body: { prompt: "x", model: "simulated-image", size: "256x256" } });
  t.equal(img.status, 403);
  t.equal(field(img.body, "error", "code"), "insufficient_scope");
  const speech = await troupe.request("POST", "/v1/audio/speech", { token: key, body: { text: "x", voice: "alto" } });
  t.equal(speech.status, 200, speech.text);
  t.equal(field(speech.body, "provider"), "simulated", "no voice match elsewhere: the simulated model serves");
});

t.test("after the fakes' URLs expire, and after a restart, every URL still serves", async (t) => {
  fake.urlTtlMs = 0;
  for (const url of storedUrls) t.ok((await download(url)).length > 0);
  const dataDir = troupe.dataDir;
  await troupe.stop();
  troupe = await startTestTroupe({ ...env, TROUPE_DATA_DIR: dataDir });
  for (const url of storedUrls) {
    const moved = url.replace(/^http:\/\/127\.0\.0\.1:\d+/, troupe.url);
    const res = await fetch(moved);
    t.equal(res.status, 200, moved);
    t.ok((await res.arrayBuffer()).byteLength > 0);
  }
});
