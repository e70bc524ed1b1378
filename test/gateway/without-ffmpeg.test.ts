// A fresh machine with nothing but Node: ffmpeg and ffprobe are not on
// PATH (this process's PATH points at an empty directory, the lookup
// execFile makes). The server says so at once — the start-up log and
// /readyz name what is unavailable and why, /readyz still answers ready —
// and every request that needs ffmpeg is refused immediately with 503
// capability_unavailable naming it, instead of a video job that sits
// `processing` and fails some 90 s later. Everything else still works.
import t from "tap";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { UsageRecord } from "../../providers/usage.ts";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";

t.setTimeout(90_000);
process.env["PATH"] = mkdtempSync(join(tmpdir(), "no-ffmpeg-path-"));
// The start-up log goes to stdout (core/log.ts): what start wrote is kept, and passed on.
const lines: string[] = [];
const write = process.stdout.write;
const passOn = write.bind(process.stdout) as (...args: unknown[]) => boolean;
process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  lines.push(String(chunk));
  return passOn(chunk, ...rest);
}) as typeof process.stdout.write;
const usage: UsageRecord[] = [];
const troupe = await startTestTroupe({}, { usage: { record: (u) => void usage.push(u) } }).finally(() => (process.stdout.write = write));
t.teardown(() => troupe.stop());
const user = await signup(troupe, "no-ffmpeg");
const { request } = troupe;
const post = (path: string, body: unknown) => request("POST", path, { token: user.testKey, body });

t.test("the start-up log names what is unavailable and why", async (t) => {
  const warnings = lines.flatMap((l) => l.split("\n")).filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { level: string; msg: string; unavailable?: { capability: string; missing: string[] }[] }).filter((l) => l.level === "warn");
  const said = warnings.find((w) => w.unavailable !== undefined);
  t.ok(said, `a warning lists them: ${lines.join("")}`);
  t.equal(said!.msg, "ffmpeg and ffprobe are not installed (not found on PATH); unavailable on this server: video, speech_conversion, audio_duration_probe (see /readyz)");
  t.same(
    said!.unavailable!.map((u) => [u.capability, u.missing]),
    [
      ["video", ["ffmpeg", "ffprobe"]],
      ["speech_conversion", ["ffmpeg"]],
      ["audio_duration_probe", ["ffprobe"]],
    ],
  );
});

t.test("/readyz: ready, with the unavailable capabilities listed", async (t) => {
  const r = await request("GET", "/readyz");
  t.equal(r.status, 200, "the rest of the server is ready");
  t.equal(field(r.body, "status"), "ready");
  const unavailable = field(r.body, "unavailable") as { capability: string; missing: string[]; reason: string; affects: string }[];
  t.same(unavailable.map((u) => u.capability), ["video", "speech_conversion", "audio_duration_probe"]);
  t.equal(unavailable[0]!.reason, "ffmpeg and ffprobe are not installed (not found on PATH)");
  t.match(unavailable[0]!.affects, /POST \/v1\/video\/generate/);
});

t.test("a video request: 503 capability_unavailable naming ffmpeg, at once, and no job", async (t) => {
  const startedMs = performance.now();
  const r = await post("/v1/video/generate", { prompt: "a cat on a piano", model: "simulated-video", duration_seconds: 1 });
  t.ok(performance.now() - startedMs < 2_000, "answered at once");
  t.equal(r.status, 503, r.text);
  t.equal(field(r.body, "error", "code"), "capability_unavailable");
  t.match(str(r.body, "error", "message"), /^video generation is unavailable on this server: ffmpeg and ffprobe are not installed \(not found on PATH\); install ffmpeg/);
  t.same(field(r.body, "error", "details"), { capability: "video", missing: ["ffmpeg", "ffprobe"] });
  t.equal(r.headers.get("retry-after"), null, "no Retry-After: waiting does not install ffmpeg");
  t.same((await request("GET", "/v1/jobs", { token: user.testKey })).body, { data: [], next_cursor: null }, "no job was made");

  const openai = await request("POST", "/openai/v1/videos", { token: user.testKey, body: { prompt: "a cat", model: "simulated-video", seconds: "4" } });
  t.equal(openai.status, 503, openai.text);
  t.match(field(openai.body, "error"), { code: "capability_unavailable", type: "server_error", message: /ffmpeg/ });
  t.equal(openai.headers.get("x-should-retry"), "false", "the OpenAI SDKs do not retry it");
});

t.test("an agent's generate_video: the model reads why, the conversation stays usable", async (t) => {
  const created = await post("/v1/agents/conversations", { model: "simulated-chat", system_prompt: "You make videos." });
  t.equal(created.status, 201, created.text);
  const id = str(created.body, "id");
  const sent = await post(`/v1/agents/conversations/${id}/messages`, { content: 'call generate_video {"prompt":"a cat","duration_seconds":1}; then answer' });
  t.equal(sent.status, 200, sent.text);
  t.equal(field(sent.body, "status"), "idle", "no video is being made");
  const tool = (field(sent.body, "messages") as { role: string; content: string }[]).find((m) => m.role === "tool");
  t.match(tool?.content, /video generation is unavailable on this server: ffmpeg and ffprobe are not installed/);
});

t.test("OpenAI speech needing a conversion: 503 naming ffmpeg and unbilled; the provider's own format still works", async (t) => {
  const before = usage.length;
  const mp3 = await post("/openai/v1/audio/speech", { model: "simulated-speech", voice: "alto", input: "hello", response_format: "mp3" });
  t.equal(mp3.status, 503, mp3.text);
  t.match(field(mp3.body, "error"), { code: "capability_unavailable", message: /^converting simulated's audio\/wav speech to mp3 is unavailable on this server: ffmpeg is not installed/ });
  t.equal(usage.length, before, "not billed");
  const wav = await post("/openai/v1/audio/speech", { model: "simulated-speech", voice: "alto", input: "hello", response_format: "wav" });
  t.equal(wav.status, 200, wav.text);
  t.equal(wav.headers.get("content-type"), "audio/wav");
});

t.test("what does not need ffmpeg works: chat, speech, its transcription, images", async (t) => {
  const chat = await post("/v1/chat/completions", { model: "simulated-chat", messages: [{ role: "user", content: "hi" }] });
  t.equal(chat.status, 200, chat.text);
  const speech = await post("/v1/audio/speech", { model: "simulated-speech", voice: "alto", text: "Hello without ffmpeg." });
  t.equal(speech.status, 200, speech.text);
  const heard = await post("/v1/audio/transcriptions", { model: "simulated-transcribe", audio_url: str(speech.body, "audio") });
  t.equal(heard.status, 200, heard.text);
  const images = await post("/v1/images/generations", { model: "simulated-image", prompt: "a lighthouse", size: "256x256" });
  t.equal(images.status, 200, images.text);
});
