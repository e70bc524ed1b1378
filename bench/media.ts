// npm run bench:media — media re-hosting throughput and speech latency,
// side by side in one run, against the fake providers (test/fakes/
// media-fakes.ts) over real loopback HTTP, Troupe in this process:
//   1. speech: p50/p99 of POST /audio/speech straight to the fake vs through
//      Troupe (tts-1 → fake → stored WAV/MP3 → file URL), interleaved; the
//      difference is what Troupe adds (routing, storing, usage).
//   2. re-hosting: images/s and MB/s of POST /v1/images/generations with
//      dall-e-3 (the fake answers a temporary URL; Troupe downloads it through
//      the outbound guard, checks the PNG, stores it), next to the fake alone
//      (generate + download the same URL directly).
// Usage: npm run bench:media [-- --requests 200 --images 120 --concurrency 8]
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: { requests: { type: "string", default: "200" }, images: { type: "string", default: "120" }, concurrency: { type: "string", default: "8" } },
});
const requests = Number(values.requests);
const imageCount = Number(values.images);
const concurrency = Number(values.concurrency);

const { loadConfig } = await import("../gateway/config.ts");
const { createLogger } = await import("../core/log.ts");
const { startTroupe } = await import("../gateway/app.ts");
const { noUsage } = await import("../providers/usage.ts");
const { startMediaFake } = await import("../test/fakes/media-fakes.ts");

const fake = await startMediaFake({ openaiKey: "sk-bench" });
const config = loadConfig({
  LOG_LEVEL: "warn",
  HOST: "127.0.0.1",
  PORT: "0",
  TROUPE_DATA_DIR: mkdtempSync(join(tmpdir(), "troupe-bench-media-")),
  OPENAI_API_KEY: "sk-bench",
  OPENAI_BASE_URL: `${fake.url}/v1`,
  OUTBOUND_ALLOW_HOSTS: "127.0.0.1",
  DEFAULT_RATE_LIMIT_PER_MINUTE: "10000000",
});
const troupe = await startTroupe(config, createLogger("warn"), { usage: noUsage });
const signup = await fetch(`${troupe.url}/v1/auth/signup`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ email: `bench-${Date.now()}@example.test`, password: "correct horse battery", name: "bench" }),
});
const key = ((await signup.json()) as { environments: { test_key: { key: string } }[] }).environments[1]!.test_key.key;

const post = async (url: string, auth: string, body: unknown) => {
  const res = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${auth}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const buf = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${buf.toString().slice(0, 200)}`);
  return buf;
};
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const ms = (x: number) => `${x.toFixed(2)} ms`;

// 1. Speech latency, interleaved so both sides see the same machine load.
const direct: number[] = [];
const via: number[] = [];
const text = "The quick brown fox jumps over the lazy dog, twice over.";
for (let i = 0; i < requests + 10; i++) {
  let t0 = performance.now();
  await post(`${fake.url}/v1/audio/speech`, "sk-bench", { model: "tts-1", input: text, voice: "nova" });
  const d = performance.now() - t0;
  t0 = performance.now();
  await post(`${troupe.url}/v1/audio/speech`, key, { text, voice: "nova", model: "tts-1" });
  const v = performance.now() - t0;
  if (i >= 10) {
    direct.push(d);
    via.push(v);
  }
}
console.log(`speech (${requests} sequential requests each, tts-1, ${text.length} characters → stored file URL)`);
console.log(`  fake directly     p50 ${ms(pct(direct, 50))}  p99 ${ms(pct(direct, 99))}`);
console.log(`  through Troupe    p50 ${ms(pct(via, 50))}  p99 ${ms(pct(via, 99))}`);
console.log(`  added by Troupe   p50 ${ms(pct(via, 50) - pct(direct, 50))}  p99 ${ms(pct(via, 99) - pct(direct, 99))}`);

// 2. Re-hosting throughput.
async function run(label: string, one: () => Promise<number>): Promise<void> {
  let next = 0;
  let bytes = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < imageCount) {
        const n = await one();
        bytes += n;
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  console.log(`  ${label.padEnd(34)} ${(imageCount / s).toFixed(1)} images/s  ${(bytes / s / 1e6).toFixed(2)} MB/s  (${imageCount} images, ${(bytes / imageCount / 1e3).toFixed(0)} kB each, ${s.toFixed(2)} s)`);
}
console.log(`re-hosting (dall-e-3 1024x1024 PNG via a temporary URL, concurrency ${concurrency})`);
await run("fake alone (generate + download)", async () => {
  const answer = JSON.parse((await post(`${fake.url}/v1/images/generations`, "sk-bench", { model: "dall-e-3", prompt: "p", n: 1, size: "1024x1024" })).toString()) as { data: { url: string }[] };
  return (await fetch(answer.data[0]!.url).then((r) => r.arrayBuffer())).byteLength;
});
await run("through Troupe (download + store)", async () => {
  const answer = JSON.parse((await post(`${troupe.url}/v1/images/generations`, key, { model: "dall-e-3", prompt: "p", n: 1, size: "1024x1024" })).toString()) as { images: string[] };
  // Bytes re-hosted: read back the stored file's length (HEAD, not counted as a download).
  return Number((await fetch(answer.images[0]!, { method: "HEAD" })).headers.get("content-length"));
});

await troupe.stop();
await fake.close();
