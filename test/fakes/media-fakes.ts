// One fake upstream per media wire format, on real HTTP (127.0.0.1):
// OpenAI (/v1/audio/speech binary mp3, /v1/audio/transcriptions multipart,
// /v1/images/generations url or b64_json), ElevenLabs (/v1/text-to-speech/
// {voice_id} with xi-api-key and output_format, /v1/speech-to-text
// multipart), Stability (/v2beta/stable-image/generate/core multipart →
// bytes) and Black Forest Labs (submit → polling_url → result.sample).
// Temporary result URLs (/tmp/<token>) expire after `urlTtlMs` with 403,
// like signed URLs. Faults: the next API call can answer a status, and the
// next download can be slow, oversized, a 5xx or a redirect elsewhere.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { listenOnLoopback } from "../support/net.ts";
import { encodePng } from "../../media/png.ts";
import { encodeWav } from "../../media/wav.ts";

export type DownloadFault = { kind: "slow"; bytesPerSecond: number } | { kind: "oversized"; bytes: number } | { kind: "status"; status: number } | { kind: "redirect"; to: string };

export interface MediaFake {
  url: string;
  /** Every API call (not downloads): method, path, headers, parsed body. */
  calls: { method: string; path: string; headers: IncomingMessage["headers"]; json?: unknown; fields?: Record<string, string>; files?: Record<string, Buffer> }[];
  /** Consumed one per API call: answer this status instead. */
  apiFaults: number[];
  /** Consumed one per /tmp download. */
  downloadFaults: DownloadFault[];
  urlTtlMs: number;
  /** Text the transcription endpoints answer. */
  transcript: string;
  close(): Promise<void>;
}

let mp3Cache: Buffer | undefined;
/** A real MP3 (1 s tone), encoded once with ffmpeg from a generated WAV. */
export function fakeMp3(): Buffer {
  if (!mp3Cache) {
    const samples = new Float32Array(16_000).map((_, i) => 0.3 * Math.sin((2 * Math.PI * 440 * i) / 16_000));
    mp3Cache = execFileSync("ffmpeg", ["-v", "error", "-f", "wav", "-i", "pipe:0", "-f", "mp3", "pipe:1"], { input: encodeWav(samples, 16_000) });
  }
  return mp3Cache;
}

function png(width: number, height: number): Buffer {
  return encodePng(width, height, (x, y) => [x & 255, y & 255, 128]);
}

/** Minimal multipart/form-data parsing: fields as text, files as bytes. */
export function parseMultipart(body: Buffer, contentType: string): { fields: Record<string, string>; files: Record<string, Buffer> } {
  const boundary = /boundary=([^;]+)/.exec(contentType)?.[1];
  const fields: Record<string, string> = {};
  const files: Record<string, Buffer> = {};
  if (!boundary) return { fields, files };
  const delimiter = Buffer.from(`--${boundary}`);
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const start = at + delimiter.length + 2;
    const next = body.indexOf(delimiter, start);
    if (next === -1) break;
    const part = body.subarray(start, next - 2);
    const headEnd = part.indexOf("\r\n\r\n");
    const head = part.subarray(0, headEnd).toString("utf8");
    const content = part.subarray(headEnd + 4);
    const name = /name="([^"]+)"/.exec(head)?.[1] ?? "";
    if (/filename="/.test(head)) files[name] = content;
    else fields[name] = content.toString("utf8");
    at = next;
  }
  return { fields, files };
}

const stabilitySizes: Record<string, [number, number]> = { "1:1": [1024, 1024], "16:9": [1344, 768], "9:16": [768, 1344], "3:2": [1216, 832], "2:3": [832, 1216] };

/** `openaiKey`: one key, or several (an account with more than one valid key, as an organization's own beside Troupe's). */
export async function startMediaFake(opts: { openaiKey?: string | readonly string[]; elevenlabsKey?: string; stabilityKey?: string; bflKey?: string } = {}): Promise<MediaFake> {
  const openaiBearers = new Set([opts.openaiKey ?? []].flat().map((k) => `Bearer ${k}`));
  const temporary = new Map<string, { bytes: Buffer; contentType: string; expiresAt: number }>();
  const tasks = new Map<string, { polls: number; sample: string }>();
  const fake: MediaFake = { url: "", calls: [], apiFaults: [], downloadFaults: [], urlTtlMs: 60_000, transcript: "the quick brown fox", close: async () => undefined };

  const keep = (bytes: Buffer, contentType: string): string => {
    const token = randomBytes(12).toString("hex");
    temporary.set(token, { bytes, contentType, expiresAt: Date.now() + fake.urlTtlMs });
    return `${fake.url}/tmp/${token}.${contentType === "image/png" ? "png" : "bin"}?sig=${randomBytes(6).toString("hex")}`;
  };
  const sendJson = (res: ServerResponse, status: number, body: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  const unauthorized = (res: ServerResponse) => sendJson(res, 401, { error: { message: "invalid api key" } });

  const download = (res: ServerResponse, token: string) => {
    const entry = temporary.get(token);
    if (!entry || entry.expiresAt < Date.now()) return sendJson(res, 403, { error: "Request has expired" });
    const fault = fake.downloadFaults.shift();
    if (fault?.kind === "status") return sendJson(res, fault.status, { error: "storage unavailable" });
    if (fault?.kind === "redirect") return res.writeHead(302, { location: fault.to }).end();
    if (fault?.kind === "oversized") {
      res.writeHead(200, { "content-type": entry.contentType });
      let sent = 0;
      const pump = () => {
        if (res.destroyed || sent >= fault.bytes) return void res.end();
        sent += 65_536;
        res.write(Buffer.alloc(65_536), () => setImmediate(pump));
      };
      return pump();
    }
    if (fault?.kind === "slow") {
      res.writeHead(200, { "content-type": entry.contentType, "content-length": String(entry.bytes.length) });
      let at = 0;
      const step = Math.max(1, Math.floor(fault.bytesPerSecond / 10));
      const timer = setInterval(() => {
        if (res.destroyed) return clearInterval(timer);
        res.write(entry.bytes.subarray(at, at + step));
        at += step;
        if (at >= entry.bytes.length) {
          clearInterval(timer);
          res.end();
        }
      }, 100);
      return;
    }
    res.writeHead(200, { "content-type": entry.contentType, "content-length": String(entry.bytes.length) }).end(entry.bytes);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const url = new URL(req.url ?? "/", "http://fake");
      const path = url.pathname;
      if (req.method === "GET" && path.startsWith("/tmp/")) return download(res, path.slice(5).split(".")[0]!);
      const contentType = req.headers["content-type"] ?? "";
      const call: MediaFake["calls"][number] = { method: req.method ?? "", path: path + url.search, headers: req.headers };
      if (contentType.startsWith("application/json") && body.length > 0) call.json = JSON.parse(body.toString("utf8"));
      if (contentType.startsWith("multipart/form-data")) Object.assign(call, parseMultipart(body, contentType));
      fake.calls.push(call);
      const fault = fake.apiFaults.shift();
      if (fault !== undefined) return sendJson(res, fault, { error: { message: `injected ${fault}` } });
      const json = (call.json ?? {}) as Record<string, unknown>;
      const bearer = req.headers.authorization;

      if (path === "/v1/audio/speech") {
        if (!openaiBearers.has(bearer ?? "")) return unauthorized(res);
        if (typeof json["input"] !== "string" || typeof json["voice"] !== "string") return sendJson(res, 400, { error: { message: "input and voice are required" } });
        return res.writeHead(200, { "content-type": "audio/mpeg" }).end(fakeMp3());
      }
      if (path === "/v1/audio/transcriptions") {
        if (!openaiBearers.has(bearer ?? "")) return unauthorized(res);
        if (!call.files?.["file"] || !call.fields?.["model"]) return sendJson(res, 400, { error: { message: "file and model are required" } });
        return sendJson(res, 200, { text: fake.transcript, language: call.fields["language"] ?? "english", duration: 1.0 });
      }
      if (path === "/v1/images/generations") {
        if (!openaiBearers.has(bearer ?? "")) return unauthorized(res);
        const [w, h] = String(json["size"] ?? "1024x1024").split("x").map(Number) as [number, number];
        const n = Number(json["n"] ?? 1);
        if (json["model"] === "dall-e-3" && n !== 1) return sendJson(res, 400, { error: { message: "dall-e-3 only supports n=1" } });
        const data = Array.from({ length: n }, () =>
          json["model"] === "gpt-image-1" ? { b64_json: png(w, h).toString("base64") } : { url: keep(png(w, h), "image/png"), revised_prompt: json["prompt"] },
        );
        return sendJson(res, 200, { created: Math.floor(Date.now() / 1000), data });
      }
      const tts = /^\/v1\/text-to-speech\/([^/]+)$/.exec(path);
      if (tts) {
        if (req.headers["xi-api-key"] !== opts.elevenlabsKey) return unauthorized(res);
        if (!url.searchParams.get("output_format") || typeof json["model_id"] !== "string") return sendJson(res, 422, { detail: "model_id and output_format required" });
        return res.writeHead(200, { "content-type": "audio/mpeg" }).end(fakeMp3());
      }
      if (path === "/v1/speech-to-text") {
        if (req.headers["xi-api-key"] !== opts.elevenlabsKey) return unauthorized(res);
        if (!call.fields?.["model_id"] || (!call.files?.["file"] && !call.fields["cloud_storage_url"])) return sendJson(res, 422, { detail: "model_id and file required" });
        return sendJson(res, 200, { language_code: call.fields["language_code"] ?? "eng", language_probability: 0.99, text: fake.transcript, words: [{ text: "the", start: 0, end: 0.4 }, { text: "fox", start: 0.5, end: 1.2 }] });
      }
      const stability = /^\/v2beta\/stable-image\/generate\/(core|ultra|sd3)$/.exec(path);
      if (stability) {
        if (bearer !== `Bearer ${opts.stabilityKey}`) return unauthorized(res);
        if (!String(req.headers.accept).startsWith("image/")) return sendJson(res, 400, { errors: ["accept must be image/*"] });
        const size = stabilitySizes[call.fields?.["aspect_ratio"] ?? "1:1"];
        if (!size || !call.fields?.["prompt"]) return sendJson(res, 400, { errors: ["prompt and a valid aspect_ratio are required"] });
        return res.writeHead(200, { "content-type": "image/png", "finish-reason": "SUCCESS" }).end(png(size[0], size[1]));
      }
      const bflSubmit = /^\/v1\/(flux-[a-z0-9.-]+)$/.exec(path);
      if (bflSubmit && req.method === "POST") {
        if (req.headers["x-key"] !== opts.bflKey) return sendJson(res, 403, { detail: "Not authenticated" });
        const id = randomBytes(8).toString("hex");
        tasks.set(id, { polls: 0, sample: keep(png(Number(json["width"]), Number(json["height"])), "image/png") });
        return sendJson(res, 200, { id, polling_url: `${fake.url}/v1/get_result?id=${id}` });
      }
      if (path === "/v1/get_result") {
        if (req.headers["x-key"] !== opts.bflKey) return sendJson(res, 403, { detail: "Not authenticated" });
        const task = tasks.get(url.searchParams.get("id") ?? "");
        if (!task) return sendJson(res, 404, { id: url.searchParams.get("id"), status: "Task not found" });
        // Pending once, then Ready: the adapter has to poll.
        task.polls += 1;
        if (task.polls < 2) return sendJson(res, 200, { id: url.searchParams.get("id"), status: "Pending", result: null });
        return sendJson(res, 200, { id: url.searchParams.get("id"), status: "Ready", result: { sample: task.sample, prompt: "x" } });
      }
      sendJson(res, 404, { error: { message: `no fake for ${req.method} ${path}` } });
    });
  });
  ({ url: fake.url, close: fake.close } = await listenOnLoopback(server));
  return fake;
}
