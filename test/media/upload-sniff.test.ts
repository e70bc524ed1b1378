// Uploads are checked by their bytes before any decoder sees them
// (docs/security-and-limits.md, "Uploaded media"), over real sockets: an HLS
// playlist sent as `input_reference` with type image/png, or as a .wav to
// the transcription upload, is a 400 naming the field and no ffmpeg or
// ffprobe process is started for it (a wrapper on PATH counts them); a real
// PNG still makes a video (ffmpeg runs). And ffmpeg itself, told the format,
// does not follow a playlist to the file it names.
import t from "tap";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ffmpeg } from "../../media/ffmpeg.ts";
import { encodePng } from "../../media/png.ts";
import { ffmpegInput, sniffAudio, sniffImage } from "../../media/sniff.ts";
import { field, signup, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(120_000);
const dir = mkdtempSync(join(tmpdir(), "troupe-sniff-"));
const runs = join(dir, "runs.log");
// Wrappers that log each run and then run the real tool: the server finds them first on PATH.
const bin = join(dir, "bin");
mkdirSync(bin);
for (const tool of ["ffmpeg", "ffprobe"]) {
  const real = (process.env["PATH"] ?? "").split(":").map((d) => join(d, tool)).find((p) => existsSync(p));
  if (!real) throw new Error(`${tool} is not installed`);
  writeFileSync(join(bin, tool), `#!/bin/sh\necho "${tool} $*" >> '${runs}'\nexec '${real}' "$@"\n`);
  chmodSync(join(bin, tool), 0o755);
}
process.env["PATH"] = `${bin}:${process.env["PATH"] ?? ""}`;
const ranTools = () => (existsSync(runs) ? readFileSync(runs, "utf8").split("\n").filter(Boolean) : []);

const troupe = await startTestTroupe({ SIMULATED_VIDEO_DELAY_MS: "200", SIMULATED_VIDEO_DIR: join(dir, "simvid"), JOB_WATCHDOG_MS: "2000" });
t.teardown(() => troupe.stop());
const user = await signup(troupe, "sniff");

// The probe's playlist: a file of the server's named as a segment.
const playlist = Buffer.from("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n/etc/hostname\n#EXT-X-ENDLIST\n");

const upload = (path: string, fields: Record<string, string>, file: { name: string; bytes: Buffer; filename: string; type: string }) => {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append(file.name, new Blob([file.bytes], { type: file.type }), file.filename);
  return fetch(`http://127.0.0.1:${troupe.port}${path}`, { method: "POST", headers: { authorization: `Bearer ${user.testKey}` }, body: form });
};

t.test("the magic numbers", async (t) => {
  t.equal(sniffImage(encodePng(2, 2, () => [0, 0, 0])), "png");
  t.equal(sniffImage(Buffer.from([0xff, 0xd8, 0xff, 0xe0])), "jpeg");
  t.equal(sniffImage(Buffer.from("RIFF\0\0\0\0WEBPVP8 ")), "webp");
  t.equal(sniffImage(Buffer.from("GIF89a")), "gif");
  t.equal(sniffImage(playlist), undefined);
  t.equal(sniffAudio(Buffer.from("RIFF\0\0\0\0WAVEfmt ")), "wav");
  t.equal(sniffAudio(Buffer.from("ID3\x04")), "mp3");
  t.equal(sniffAudio(playlist), undefined);
});

t.test("a playlist sent as image/png: 400 naming input_reference, no ffmpeg run, no job", async (t) => {
  const before = ranTools().length;
  const res = await upload("/openai/v1/videos", { model: "simulated-video", prompt: "x", seconds: "1" }, { name: "input_reference", bytes: playlist, filename: "start.png", type: "image/png" });
  const body: unknown = await res.json();
  t.equal(res.status, 400, JSON.stringify(body));
  t.equal(field(body, "error", "param"), "input_reference");
  t.notMatch(JSON.stringify(body), /etc|hostname/, "nothing of the playlist's target in the answer");
  t.same(ranTools().slice(before), [], "no ffmpeg or ffprobe process");
  const list = await troupe.request("GET", "/openai/v1/videos", { token: user.testKey });
  t.same(field(list.body, "data"), [], "no job was started");
});

t.test("a playlist sent as a .wav to the transcription upload: 400 naming file, no ffprobe run", async (t) => {
  const before = ranTools().length;
  const res = await upload("/openai/v1/audio/transcriptions", { model: "simulated-transcribe" }, { name: "file", bytes: playlist, filename: "speech.wav", type: "audio/wav" });
  const body: unknown = await res.json();
  t.equal(res.status, 400, JSON.stringify(body));
  t.equal(field(body, "error", "param"), "file");
  t.same(ranTools().slice(before), []);
});

t.test("a real PNG still makes a video, ffmpeg reading it as png_pipe from a file only", async (t) => {
  const res = await upload("/openai/v1/videos", { model: "simulated-video", prompt: "drift", seconds: "1" }, { name: "input_reference", bytes: encodePng(64, 36, () => [200, 80, 40]), filename: "start.png", type: "image/png" });
  const created = (await res.json()) as { id: string };
  t.equal(res.status, 200, JSON.stringify(created));
  let status = "";
  for (let i = 0; i < 300 && status !== "completed" && status !== "failed"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 150));
    status = String(field((await troupe.request("GET", `/openai/v1/videos/${created.id}`, { token: user.testKey })).body, "status"));
  }
  t.equal(status, "completed");
  t.ok(
    ranTools().some((line) => line.includes("-protocol_whitelist file -f png_pipe -i")),
    "the image was opened with the file protocol only and the png demuxer named",
  );
});

t.test("ffmpeg told the format does not follow a playlist to the file it names", async (t) => {
  const file = join(dir, "playlist.png");
  writeFileSync(file, playlist);
  const error = await ffmpeg(["-stream_loop", "-1", "-t", "1", ...ffmpegInput(file, { image: "png" }), "-frames:v", "1", "-f", "null", "-"], { timeoutMs: 20_000 }).catch((e: unknown) => e);
  t.type(error, Error, "refused: not a PNG");
  t.notMatch(String(error), /hostname/, "the playlist's segment was never opened");
});
