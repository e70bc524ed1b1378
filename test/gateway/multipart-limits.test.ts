// What a multipart body may cost (docs/security-and-limits.md, "Multipart
// bodies"), over real sockets: the probe's 8.9 MB of 150,000 parts to the
// transcription and video uploads is refused 413 naming the part limit
// without holding the event loop (it held it 1.4–1.9 s while every part was
// built); a text field of invalid UTF-8 is a 400 naming it, as a JSON body's
// is; a text field past its size limit is a 413 naming it.
import t from "tap";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { maxMultipartParts, maxTextFieldBytes } from "../../gateway/multipart.ts";
import { field, signup, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(120_000);
const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());
const user = await signup(troupe, "multipart");
// Short, so 150,000 parts fit the probe's 8.9 MB as its did.
const boundary = "tRbB";
const contentType = `multipart/form-data; boundary=${boundary}`;

/** A multipart body of the given parts (text fields unless a filename is given). */
function multipart(parts: { name: string; value: Buffer | string; filename?: string; type?: string }[]): Buffer {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const file = p.filename === undefined ? "" : `; filename="${p.filename}"\r\nContent-Type: ${p.type ?? "application/octet-stream"}`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${file}\r\n\r\n`), Buffer.from(p.value), Buffer.from("\r\n"));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

const execFileAsync = promisify(execFile);
const post = (path: string, body: Buffer) => troupe.request("POST", path, { token: user.testKey, rawBody: body, headers: { "content-type": contentType } });

/**
 * POST from a child process, so the only work on this process's event loop
 * is the server's (an in-process client sending 9 MB would stall it too).
 */
async function postFromChild(path: string, bodyFile: string): Promise<{ status: number; text: string }> {
  const script = `const body = require("node:fs").readFileSync(process.argv[1]);
fetch(process.argv[2], { method: "POST", headers: { authorization: process.argv[3], "content-type": process.argv[4] }, body })
  .then(async (r) => process.stdout.write(JSON.stringify({ status: r.status, text: await r.text() })));`;
  const url = `http://127.0.0.1:${troupe.port}${path}`;
  const { stdout } = await execFileAsync(process.execPath, ["-e", script, bodyFile, url, `Bearer ${user.testKey}`, contentType]);
  return JSON.parse(stdout) as { status: number; text: string };
}

/** The longest the event loop went without running a 1 ms timer while `work` ran. */
async function longestStall<T>(work: () => Promise<T>): Promise<{ result: T; stallMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 1);
  try {
    const result = await work();
    return { result, stallMs };
  } finally {
    clearInterval(timer);
  }
}

t.test("150,000 parts in 8.9 MB: 413 naming the part limit, the loop not held", async (t) => {
  const parts = Array.from({ length: 150_000 }, (_, i) => ({ name: `f${i}`, value: "x" }));
  const body = multipart([{ name: "model", value: "simulated-transcribe" }, ...parts]);
  t.ok(body.length > 8_500_000 && body.length < 10 * 1024 * 1024, `${body.length} bytes, within MAX_BODY_BYTES`);
  const dir = await mkdtemp(join(tmpdir(), "troupe-multipart-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const bodyFile = join(dir, "parts.bin");
  await writeFile(bodyFile, body);
  for (const path of ["/openai/v1/audio/transcriptions", "/openai/v1/videos"]) {
    const { result: res, stallMs } = await longestStall(async () => {
      const [answer, health] = await Promise.all([postFromChild(path, bodyFile), troupe.request("GET", "/healthz")]);
      t.equal(health.status, 200, "/healthz answered meanwhile");
      return answer;
    });
    const parsed: unknown = JSON.parse(res.text);
    t.equal(res.status, 413, `${path}: ${res.text.slice(0, 200)}`);
    t.equal(field(parsed, "error", "code"), "payload_too_large");
    t.match(field(parsed, "error", "message"), `more than ${maxMultipartParts} parts`);
    t.ok(res.text.length < 1024, "a short answer");
    // Loose: the old reader held the loop 1.4–1.9 s on this body on an idle machine (bench/hostile-health.ts measures it).
    t.ok(stallMs < 1000, `${path}: longest event-loop stall ${stallMs.toFixed(0)} ms`);
  }
});

t.test("the part limit is exact: 32 parts are read (and the extra fields named), 33 are not", async (t) => {
  const extra = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `extra${i}`, value: "1" }));
  const at = await post("/openai/v1/videos", multipart([{ name: "prompt", value: "a boat" }, ...extra(maxMultipartParts - 1)]));
  t.equal(at.status, 400, at.text.slice(0, 300));
  t.match(field(at.body, "error", "message"), /unknown field\(s\): extra0/);
  const past = await post("/openai/v1/videos", multipart([{ name: "prompt", value: "a boat" }, ...extra(maxMultipartParts)]));
  t.equal(past.status, 413, past.text.slice(0, 300));
});

t.test("a text field of invalid UTF-8 is a 400 naming it, as in a JSON body", async (t) => {
  const latin1 = Buffer.from([0x70, 0x61, 0x73, 0x73, 0xe9]); // "pass\xe9"
  const res = await post("/openai/v1/videos", multipart([{ name: "prompt", value: latin1 }]));
  t.equal(res.status, 400, res.text.slice(0, 300));
  t.equal(field(res.body, "error", "param"), "prompt");
  t.equal(field(res.body, "error", "message"), "body.prompt: invalid UTF-8");
  const transcription = await post("/openai/v1/audio/transcriptions", multipart([{ name: "model", value: Buffer.from([0x77, 0xff]) }]));
  t.equal(transcription.status, 400);
  t.equal(field(transcription.body, "error", "message"), "body.model: invalid UTF-8");
});

t.test("a text field past its limit is a 413 naming it; broken framing is a 400", async (t) => {
  const res = await post("/openai/v1/videos", multipart([{ name: "prompt", value: "p".repeat(maxTextFieldBytes + 1) }]));
  t.equal(res.status, 413, res.text.slice(0, 300));
  t.equal(field(res.body, "error", "param"), "prompt");
  t.equal(field(res.body, "error", "message"), `the multipart field prompt exceeds ${maxTextFieldBytes} bytes`);
  const unterminated = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\na boat`);
  const cut = await post("/openai/v1/videos", unterminated);
  t.equal(cut.status, 400);
  t.match(field(cut.body, "error", "message"), /not valid multipart\/form-data: the body ends inside a part/);
});

t.test("a well-formed upload from the platform's own FormData is still read", async (t) => {
  const form = new FormData();
  form.append("prompt", "a boat, naïvely drawn");
  form.append("model", "troupe/auto");
  form.append("unknown_field", "1");
  const res = await fetch(`http://127.0.0.1:${troupe.port}/openai/v1/videos`, { method: "POST", headers: { authorization: `Bearer ${user.testKey}` }, body: form });
  const body: unknown = await res.json();
  t.equal(res.status, 400, "every field was read, down to the unknown one");
  t.match(field(body, "error", "message"), /unknown field\(s\): unknown_field/);
});
