// The subtitle and verbose renderings of a transcript with timed segments
// (what OpenAI's whisper-1 gives): SRT and WebVTT timestamps past a minute
// and an hour, segments passed through, the language named in English.
import t from "tap";
import { languageName, srt, timestamp, verboseJson, vtt } from "../../../gateway/compat/openai/transcription-formats.ts";

const segments = [
  { start: 0, end: 2.5, text: " Hello there." },
  { start: 61.25, end: 3725.004, text: "A long pause later." },
];

t.test("timestamps", async (t) => {
  t.equal(timestamp(0, ","), "00:00:00,000");
  t.equal(timestamp(61.25, ","), "00:01:01,250");
  t.equal(timestamp(3725.004, "."), "01:02:05.004");
});

t.test("srt and vtt", async (t) => {
  t.equal(srt(segments), "1\n00:00:00,000 --> 00:00:02,500\nHello there.\n\n2\n00:01:01,250 --> 01:02:05,004\nA long pause later.\n\n");
  t.equal(vtt(segments), "WEBVTT\n\n00:00:00.000 --> 00:00:02.500\nHello there.\n\n00:01:01.250 --> 01:02:05.004\nA long pause later.\n\n");
});

t.test("verbose_json keeps the provider's segments and language", async (t) => {
  const v = verboseJson({ text: "Hello there. A long pause later.", segments, language: "english" }, 3725.004, "fr");
  t.equal(v.language, "english", "the provider's language wins over the one asked");
  t.same(v.segments.map((s) => [s.id, s.start, s.end, s.text]), [[0, 0, 2.5, " Hello there."], [1, 61.25, 3725, "A long pause later."]]);
  t.equal(v.duration, 3725);
  t.equal(languageName("pt-BR"), "pt-br");
  t.equal(languageName("de"), "german");
  t.equal(languageName(undefined), "unknown");
});
