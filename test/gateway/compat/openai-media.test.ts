// The official `openai` SDK against /openai/v1/images/generations (stored
// images as URLs, or b64_json) and /openai/v1/audio/speech (the audio in the
// body) and /openai/v1/audio/transcriptions (a multipart upload), through the
// simulated provider's real PNG and WAV output.
import t from "tap";
import OpenAI, { toFile } from "openai";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runTool } from "../../../media/ffmpeg.ts";
import { imageInfo } from "../../../media/png.ts";
import { startCompatHarness } from "./openai-harness.ts";

t.setTimeout(60_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();

t.test("images: URLs of stored images by default", async (t) => {
  const { data: r, request_id } = await client.images.generate({ model: "simulated-image", prompt: "a red square", n: 2, size: "256x256" }).withResponse();
  t.type(r.created, "number");
  t.equal(r.data!.length, 2);
  for (const image of r.data!) {
    t.match(image.url, new RegExp(`^http://127\\.0\\.0\\.1:${h.troupe.port}/v1/files/file_`), "a Troupe file URL, never a provider's");
    const got = await fetch(image.url!);
    t.equal(got.status, 200);
    t.match(imageInfo(Buffer.from(await got.arrayBuffer())), { format: "png", width: 256, height: 256 });
  }
  t.match(h.usage.filter((u) => u.request_id === request_id), [{ category: "images", model: "simulated-image", units: (2 * 256 * 256) / 1e6 }]);
});

t.test("images: b64_json", async (t) => {
  const r = await client.images.generate({ model: "simulated-image", prompt: "a blue square", size: "512x512", response_format: "b64_json" });
  t.equal(r.data!.length, 1);
  t.notOk(r.data![0]!.url);
  t.match(imageInfo(Buffer.from(r.data![0]!.b64_json!, "base64")), { format: "png", width: 512, height: 512 });
});

t.test("images: a size the model cannot make is a 400 naming size", async (t) => {
  const e = await client.images.generate({ model: "simulated-image", prompt: "x", size: "1536x1024" }).catch((e: unknown) => e);
  t.type(e, OpenAI.BadRequestError);
  t.equal((e as InstanceType<typeof OpenAI.BadRequestError>).param, "size");
});

t.test("speech: the audio itself in the body", async (t) => {
  const res = await client.audio.speech.create({ model: "simulated-speech", voice: "alto", input: "Hello from Troupe", response_format: "wav" });
  t.equal(res.headers.get("content-type"), "audio/wav");
  const bytes = Buffer.from(await res.arrayBuffer());
  t.equal(bytes.subarray(0, 4).toString("latin1"), "RIFF");
  t.equal(bytes.subarray(8, 12).toString("latin1"), "WAVE");
  const request_id = res.headers.get("x-request-id");
  t.match(h.usage.filter((u) => u.request_id === request_id), [{ category: "audio", model: "simulated-speech", units: "Hello from Troupe".length }]);
});

t.test("speech: a voice the model does not have is a 400 naming voice", async (t) => {
  const e = await client.audio.speech.create({ model: "simulated-speech", voice: "alloy", input: "x" }).catch((e: unknown) => e);
  t.type(e, OpenAI.BadRequestError);
  t.equal((e as InstanceType<typeof OpenAI.BadRequestError>).param, "voice");
});

t.test("transcriptions: the SDK's multipart upload, json and text", async (t) => {
  const speech = await client.audio.speech.create({ model: "simulated-speech", voice: "bass", input: "Some words to transcribe again", response_format: "wav" });
  const wav = Buffer.from(await speech.arrayBuffer());
  const { data: r, request_id } = await client.audio.transcriptions.create({ model: "simulated-transcribe", file: await toFile(wav, "speech.wav"), language: "en" }).withResponse();
  t.match(r.text, /^[A-Z].+\.$/, "a transcript");
  const usage = h.usage.filter((u) => u.request_id === request_id);
  t.match(usage, [{ category: "audio", model: "simulated-transcribe", units: Number }]);
  t.ok(usage[0]!.units! > 0, "billed by seconds of audio");
  const text = await client.audio.transcriptions.create({ model: "simulated-transcribe", file: await toFile(wav, "speech.wav"), language: "en", response_format: "text" });
  t.equal(text, r.text, "response_format text: the plain transcript");
  const bad = await client.audio.transcriptions.create({ model: "tts-1", file: await toFile(wav, "speech.wav") }).catch((e: unknown) => e);
  t.type(bad, OpenAI.BadRequestError, "a speech model cannot transcribe");
  t.equal((bad as InstanceType<typeof OpenAI.BadRequestError>).param, "model");
  const json = await h.troupe.request("POST", "/openai/v1/audio/transcriptions", { token: h.user.testKey, body: { model: "simulated-transcribe" } });
  t.equal(json.status, 415, "a JSON body is not an upload");
  const form = new FormData();
  form.append("model", "simulated-transcribe");
  form.append("model", "whisper-1");
  form.append("file", new Blob([wav], { type: "audio/wav" }), "speech.wav");
  const twice = await fetch(`${h.baseURL}/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${h.user.testKey}` }, body: form });
  t.equal(twice.status, 400);
  t.match(await twice.json(), { error: { param: "model", message: /more than once/ } }, "a field given twice");
  t.match(json.body, { error: { type: "invalid_request_error", code: "unsupported_media_type" } });
});

t.test("transcriptions: verbose_json, srt and vtt as OpenAI answers them", async (t) => {
  const speech = await client.audio.speech.create({ model: "simulated-speech", voice: "bass", input: "Subtitles for a short clip", response_format: "wav" });
  const wav = Buffer.from(await speech.arrayBuffer());
  const file = () => toFile(wav, "speech.wav");
  const verbose = await client.audio.transcriptions.create({ model: "simulated-transcribe", file: await file(), language: "en", response_format: "verbose_json" });
  t.equal(verbose.language, "english", "the language named as OpenAI names it");
  t.ok(verbose.duration > 0, `duration ${verbose.duration}`);
  t.match(verbose, { task: "transcribe", text: String, usage: { type: "duration", seconds: Number } });
  t.equal(verbose.segments?.length, 1, "one segment over the whole audio (the provider times none)");
  t.match(verbose.segments?.[0], { id: 0, seek: 0, start: 0, end: verbose.duration, text: verbose.text.trim(), tokens: [], temperature: 0, avg_logprob: 0, compression_ratio: 0, no_speech_prob: 0 });

  const srt = await client.audio.transcriptions.create({ model: "simulated-transcribe", file: await file(), language: "en", response_format: "srt" });
  t.match(srt, /^1\n00:00:00,000 --> 00:00:0\d,\d{3}\n.+\n\n$/, "SubRip: index, comma milliseconds, blank line");
  const { data: vtt, response } = await client.audio.transcriptions.create({ model: "simulated-transcribe", file: await file(), language: "en", response_format: "vtt" }).withResponse();
  t.match(vtt, /^WEBVTT\n\n00:00:00\.000 --> 00:00:0\d\.\d{3}\n.+\n\n$/, "WebVTT: header, dot milliseconds");
  t.equal(response.headers.get("content-type"), "text/vtt; charset=utf-8");
  t.ok(srt.includes(verbose.text.trim()) && vtt.includes(verbose.text.trim()), "the same transcript");
  const bad = await client.audio.transcriptions.create({ model: "simulated-transcribe", file: await file(), response_format: "diarized_json" }).catch((e: unknown) => e);
  t.type(bad, OpenAI.BadRequestError);
  t.equal((bad as InstanceType<typeof OpenAI.BadRequestError>).param, "response_format");
});

t.test("speech: every response_format, converted with ffmpeg from the provider's WAV; mp3 by default", async (t) => {
  const expected = {
    mp3: { type: "audio/mpeg", format: "mp3", codec: "mp3" },
    opus: { type: "audio/ogg", format: "ogg", codec: "opus" },
    aac: { type: "audio/aac", format: "aac", codec: "aac" },
    flac: { type: "audio/flac", format: "flac", codec: "flac" },
    wav: { type: "audio/wav", format: "wav", codec: "pcm_s16le" },
    pcm: { type: "audio/pcm", format: "s16le", codec: "pcm_s16le" },
  } as const;
  const dir = await mkdtemp(join(tmpdir(), "troupe-speech-formats-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const cases: [keyof typeof expected | "default", (typeof expected)[keyof typeof expected]][] = [...(Object.keys(expected) as (keyof typeof expected)[]).map((f) => [f, expected[f]] as [keyof typeof expected, (typeof expected)[keyof typeof expected]]), ["default", expected.mp3]];
  const durations = new Map<string, number>();
  for (const [format, want] of cases) {
    const res = await client.audio.speech.create({ model: "simulated-speech", voice: "alto", input: "Formats of the same words", ...(format === "default" ? {} : { response_format: format }) });
    t.equal(res.headers.get("content-type"), want.type, `${format}: Content-Type`);
    const path = join(dir, `speech.${format}`);
    await writeFile(path, Buffer.from(await res.arrayBuffer()));
    // Raw PCM has no header: ffprobe is told what it is (OpenAI's 24 kHz mono s16le) and must read a duration from it.
    const rawArgs = format === "pcm" ? ["-f", "s16le", "-ar", "24000", "-ac", "1"] : [];
    const probe = JSON.parse(await runTool("ffprobe", ["-v", "error", ...rawArgs, "-show_entries", "format=format_name,duration:stream=codec_name,sample_rate,channels", "-of", "json", path])) as {
      format: { format_name: string; duration: string };
      streams: { codec_name: string; sample_rate: string; channels: number }[];
    };
    t.equal(probe.format.format_name, want.format, `${format}: ffprobe reads ${want.format}`);
    t.equal(probe.streams[0]?.codec_name, want.codec, `${format}: codec ${want.codec}`);
    t.ok(Number(probe.format.duration) > 0.5, `${format}: ${probe.format.duration} s of audio`);
    durations.set(format, Number(probe.format.duration));
  }
  // Read as 24 kHz mono, the raw samples last as long as the WAV only if they were resampled to it (the provider's is 16 kHz).
  t.ok(Math.abs(durations.get("pcm")! - durations.get("wav")!) < 0.05, `pcm lasts as long as wav: ${durations.get("pcm")} / ${durations.get("wav")} s`);
});
