// The small media helpers: WAV encode/duration (checked by ffprobe too), PNG
// encode and PNG/JPEG dimension reading (a JPEG made by ffmpeg), audio
// duration through ffprobe for non-WAV bytes, multipart bodies, n split into
// calls, and the BFL polling-URL domain rule.
import t from "tap";
import { execFileSync } from "node:child_process";
import { encodeWav, wavDurationSeconds } from "../../media/wav.ts";
import { encodePng, imageInfo } from "../../media/png.ts";
import { audioDurationSeconds } from "../../media/audio-duration.ts";
import { multipart } from "../../providers/media-http.ts";
import { splitCalls } from "../../providers/images.ts";
import { sameProviderDomain } from "../../providers/bfl/index.ts";
import { fakeMp3, parseMultipart } from "../fakes/media-fakes.ts";

t.test("WAV: encoded length and duration", async (t) => {
  const wav = encodeWav(new Float32Array(8000), 16_000);
  t.equal(wav.length, 44 + 16_000);
  t.equal(wavDurationSeconds(wav), 0.5);
  t.equal(wavDurationSeconds(Buffer.from("not a wav at all")), undefined);
  t.equal(await audioDurationSeconds(wav), 0.5, "the header answers without ffprobe");
});

t.test("ffprobe tells the duration of other formats", async (t) => {
  const seconds = await audioDurationSeconds(fakeMp3());
  t.ok(seconds !== undefined && Math.abs(seconds - 1) < 0.1, `mp3 of 1 s: ${seconds}`);
  t.equal(await audioDurationSeconds(Buffer.from("garbage bytes, not audio")), undefined);
});

t.test("PNG and JPEG dimensions", async (t) => {
  const png = encodePng(7, 3, () => [1, 2, 3]);
  t.same(imageInfo(png), { format: "png", width: 7, height: 3 });
  const jpeg = execFileSync("ffmpeg", ["-v", "error", "-f", "png_pipe", "-i", "pipe:0", "-f", "mjpeg", "pipe:1"], { input: encodePng(40, 24, (x) => [x * 5, 0, 0]) });
  t.same(imageInfo(jpeg), { format: "jpeg", width: 40, height: 24 }, "ffmpeg decoded our PNG and its JPEG reads back");
  t.equal(imageInfo(Buffer.from("GIF89a....")), undefined);
});

t.test("multipart round trip", async (t) => {
  const form = multipart({ model: "whisper-1", language: undefined, x: "y" }, [{ name: "file", filename: 'a"b.wav', contentType: "audio/wav", bytes: Buffer.from([0, 1, 2, 13, 10]) }]);
  const parsed = parseMultipart(form.body, form.contentType);
  t.same(parsed.fields, { model: "whisper-1", x: "y" });
  t.same([...parsed.files["file"]!], [0, 1, 2, 13, 10]);
});

t.test("n split into calls", async (t) => {
  t.same(splitCalls(4, 1), [1, 1, 1, 1]);
  t.same(splitCalls(3, 4), [3]);
  t.same(splitCalls(3, 2), [2, 1]);
});

t.test("BFL polling URLs stay on the provider's domain", async (t) => {
  t.ok(sameProviderDomain("https://api.bfl.ai", "https://api.us1.bfl.ai/v1/get_result?id=1"));
  t.ok(sameProviderDomain("http://127.0.0.1:9", "http://127.0.0.1:9/v1/get_result"));
  t.notOk(sameProviderDomain("https://api.bfl.ai", "https://evil.example/v1/get_result"));
  t.notOk(sameProviderDomain("https://api.bfl.ai", "http://api.us1.bfl.ai/x"), "no downgrade to http");
  t.notOk(sameProviderDomain("http://127.0.0.1:9", "http://127.0.0.1:10/x"));
  t.notOk(sameProviderDomain("https://api.bfl.ai", "not a url"));
});
