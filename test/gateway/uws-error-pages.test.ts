// The patch that turns uWS's compiled-in HTML error pages into JSON
// (gateway/uws-error-pages.ts, scripts/patch-uws-errors.ts): same length,
// idempotent, refuses a binary it was not written for, and the script
// patches a copy of the real binary back to what is installed.
import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { promisify } from "node:util";
import t from "tap";
import { loadedPageState, loadedUwsBinary, pageState, patchBinary, uwsErrorPages } from "../../gateway/uws-error-pages.ts";
import { binaryVerdict, startRefusal } from "../../gateway/uws-binary-pins.ts";

const run = promisify(execFile);

/** The installed binary with its pages put back to uWS's HTML. */
function unpatched(): Buffer {
  const binary = Buffer.from(readFileSync(loadedUwsBinary()));
  for (const p of uwsErrorPages) {
    const at = binary.indexOf(Buffer.from(p.replacement + "\0", "latin1"));
    if (at !== -1) binary.write(p.original, at, "latin1");
  }
  return binary;
}

t.test("each JSON page has the exact length of the HTML one, and is the error body", async (t) => {
  for (const p of uwsErrorPages) {
    t.equal(Buffer.byteLength(p.replacement, "latin1"), Buffer.byteLength(p.original, "latin1"), `${p.status}: same length`);
    const [head = "", body = ""] = p.replacement.split("\r\n\r\n");
    t.equal(head.split("\r\n")[0], p.original.split("\r\n")[0], `${p.status}: same status line`);
    t.match(head, /content-type:application\/json/);
    t.match(JSON.parse(body), { error: { code: /^[a-z_]+$/ } }, `${p.status}: JSON with a code`);
  }
});

t.test("patching is idempotent and touches only the pages", async (t) => {
  const html = unpatched();
  t.equal(pageState(html), "html");
  const json = patchBinary(html);
  if (!json) throw new Error("expected a patched binary");
  t.equal(pageState(json), "json");
  t.equal(json.length, html.length);
  let changed = 0;
  for (let i = 0; i < html.length; i++) if (html[i] !== json[i]) changed++;
  t.ok(changed > 0 && changed < 400, `${changed} bytes changed`);
  t.equal(patchBinary(json), undefined, "a patched binary is left alone");
  t.equal(loadedPageState(), "json", "the binary this process loaded is patched");
});

t.test("a binary without the expected pages, or with one twice, is refused", async (t) => {
  t.equal(pageState(Buffer.from("no uWS here")), "unknown");
  t.throws(() => patchBinary(Buffer.from("no uWS here")), /different uWS build/);
  const first = uwsErrorPages[0];
  if (!first) throw new Error("no pages");
  const twice = Buffer.concat([unpatched(), Buffer.from(first.original + "\0", "latin1")]);
  t.throws(() => patchBinary(twice), /different uWS build/);
});

t.test("the script patches every Linux binary in a directory, once", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "uws-bin-"));
  const name = basename(loadedUwsBinary()).replace(/^uws_[a-z]+_/, "uws_linux_");
  writeFileSync(join(dir, name), unpatched());
  copyFileSync(join(dir, name), join(dir, "uws_darwin_arm64_127.node"));
  const script = join(import.meta.dirname, "../../scripts/patch-uws-errors.ts");
  const first = await run(process.execPath, [script, dir]);
  t.match(first.stdout, `${name}: error pages rewritten as JSON`);
  t.equal(pageState(readFileSync(join(dir, name))), "json");
  t.equal(pageState(readFileSync(join(dir, "uws_darwin_arm64_127.node"))), "html", "macOS binaries are left alone (signatures)");
  const second = await run(process.execPath, [script, dir]);
  t.match(second.stdout, `${name}: already JSON`);
  writeFileSync(join(dir, "uws_linux_x64_999.node"), "not a uWS build");
  await t.rejects(run(process.execPath, [script, dir]), "exits non-zero on a binary it cannot patch");
  const lenient = await run(process.execPath, [script, dir, "--postinstall"]);
  t.match(lenient.stderr, /uws_linux_x64_999.node: not patched/);
});

t.test("binaries are judged by their pinned checksums", async (t) => {
  const name = basename(loadedUwsBinary());
  const installed = readFileSync(loadedUwsBinary());
  t.equal(binaryVerdict(name, installed), "patched", "the installed binary is the pinned build, patched");
  t.equal(binaryVerdict(name, unpatched()), "unpatched", "with its pages put back it is the pinned build as shipped");
  const tampered = Buffer.from(installed);
  tampered[tampered.length - 1] = (tampered[tampered.length - 1] ?? 0) ^ 1;
  t.equal(binaryVerdict(name, tampered), "unknown", "one flipped bit: not the pinned build");
  t.equal(binaryVerdict("uws_linux_x64_999.node", installed), "unknown", "a name without a pin");
});

t.test("the script refuses a binary that is not the pinned build, even with the expected pages", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "uws-pin-"));
  const name = basename(loadedUwsBinary());
  const other = unpatched();
  other[other.length - 1] = (other[other.length - 1] ?? 0) ^ 1;
  t.equal(pageState(other), "html", "its pages alone would pass");
  writeFileSync(join(dir, name), other);
  const script = join(import.meta.dirname, "../../scripts/patch-uws-errors.ts");
  const failed = await run(process.execPath, [script, dir]).then(
    () => undefined,
    (error: unknown) => error as { stderr: string },
  );
  t.match(failed?.stderr, /not the uws-pack 20\.0\.8 build/);
  t.equal(pageState(readFileSync(join(dir, name))), "html", "left unchanged");
});

t.test("UWS_BINARY_CHECK=refuse stops a start on anything but the pinned patched binary", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "uws-start-"));
  const name = basename(loadedUwsBinary());
  t.equal(startRefusal("refuse", loadedUwsBinary()), undefined, "the installed binary starts");
  writeFileSync(join(dir, name), unpatched());
  t.match(startRefusal("refuse", join(dir, name)), /HTML error pages/);
  t.equal(startRefusal("warn", join(dir, name)), undefined, "warn serves anyway (the gateway logs it)");
  writeFileSync(join(dir, name), "not a uWS build");
  t.match(startRefusal("refuse", join(dir, name)), /not the uws-pack 20\.0\.8 build/);
});
