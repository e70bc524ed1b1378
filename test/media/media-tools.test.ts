// The ffmpeg/ffprobe lookup and what each gap makes unavailable: a tool is
// found as execFile would find it (an executable file of that name in a PATH
// directory, the first one winning), and each missing tool takes away the
// capabilities that need it, refused with 503 capability_unavailable.
import t from "tap";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { isTroupeError } from "../../core/errors.ts";
import { Capabilities, findTools } from "../../media/media-tools.ts";

function dirWith(files: Record<string, number>): string {
  const dir = mkdtempSync(join(tmpdir(), "tools-"));
  for (const [name, mode] of Object.entries(files)) {
    writeFileSync(join(dir, name), "#!/bin/sh\n");
    chmodSync(join(dir, name), mode);
  }
  return dir;
}

t.test("found on PATH only as an executable file", async (t) => {
  const both = dirWith({ ffmpeg: 0o755, ffprobe: 0o755 });
  const notExecutable = dirWith({ ffmpeg: 0o644 });
  const probeOnly = dirWith({ ffprobe: 0o755 });
  t.same([...(await findTools(both))].sort(), ["ffmpeg", "ffprobe"]);
  t.same([...(await findTools(notExecutable))], [], "a file that may not be run is not installed");
  t.same([...(await findTools([notExecutable, probeOnly].join(delimiter)))], ["ffprobe"]);
  t.same([...(await findTools(`${delimiter}${probeOnly}${delimiter}${both}`))].sort(), ["ffmpeg", "ffprobe"], "empty entries skipped, later directories searched");
  t.same([...(await findTools(undefined))], [], "no PATH: nothing found");
});

t.test("each missing tool takes away what needs it", async (t) => {
  t.same(new Capabilities(["ffmpeg", "ffprobe"]).unavailable, [], "all there: nothing unavailable");
  const noProbe = new Capabilities(["ffmpeg"]);
  t.same(noProbe.unavailable.map((u) => [u.capability, u.missing, u.reason]), [
    ["video", ["ffprobe"], "ffprobe is not installed (not found on PATH)"],
    ["audio_duration_probe", ["ffprobe"], "ffprobe is not installed (not found on PATH)"],
  ]);
  t.equal(noProbe.missing("speech_conversion"), undefined, "conversion needs ffmpeg only");
  t.equal(new Capabilities([]).summary(), "ffmpeg and ffprobe are not installed (not found on PATH); unavailable on this server: video, speech_conversion, audio_duration_probe (see /readyz)");
});

t.test("require: 503 capability_unavailable naming the tools, or nothing", async (t) => {
  new Capabilities(["ffmpeg", "ffprobe"]).require("video", "video generation");
  const error = (() => {
    try {
      new Capabilities(["ffprobe"]).require("video", "video generation");
    } catch (e) {
      return e;
    }
    return undefined;
  })();
  t.ok(isTroupeError(error));
  if (!isTroupeError(error)) return;
  t.equal(error.code, "capability_unavailable");
  t.equal(error.status, 503);
  t.equal(error.message, "video generation is unavailable on this server: ffmpeg is not installed (not found on PATH); install ffmpeg (which provides ffprobe) and restart Troupe");
  t.same(error.details, { capability: "video", missing: ["ffmpeg"] });
});
