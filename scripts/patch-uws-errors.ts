// `npm run patch:uws [dir]` (also npm's postinstall): rewrites the HTML error
// pages compiled into uWS's Linux binaries as JSON error bodies of the same
// length (why and how: gateway/uws-error-pages.ts). Idempotent. Each file
// is written beside the original and renamed over it, so a process that
// has the old one loaded keeps its mapping intact. macOS and Windows
// binaries are left alone: changing a signed binary breaks its signature.
// Each binary must be the pinned uws-pack build (gateway/uws-binary-pins.ts)
// before, and its pinned patched checksum after: anything else is refused.
// `--print-pins` prints the pins for the unpatched binaries of a directory.
import { readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { loadedUwsBinary, patchBinary } from "../gateway/uws-error-pages.ts";
import { binaryVerdict, sha256, uwsPackVersion } from "../gateway/uws-binary-pins.ts";

// The directory of the binaries: uWebSockets.js's own unless given (tests patch a copy).
const bin = process.argv.slice(2).find((a) => !a.startsWith("--")) ?? dirname(loadedUwsBinary());
const linuxBinaries = readdirSync(bin).filter((n) => /^uws_linux_.*\.node$/.test(n)).sort();
if (process.argv.includes("--print-pins")) {
  for (const name of linuxBinaries) {
    const original = readFileSync(join(bin, name));
    const patched = patchBinary(original) ?? original;
    console.log(`  "${name}": { original: "${sha256(original)}", patched: "${sha256(patched)}" },`);
  }
  process.exit(0);
}
let failed = false;
for (const name of linuxBinaries) {
  const file = join(bin, name);
  try {
    const bytes = readFileSync(file);
    const verdict = binaryVerdict(name, bytes);
    if (verdict === "patched") {
      console.log(`${name}: already JSON (pinned checksum)`);
      continue;
    }
    if (verdict === "unknown") throw new Error(`not the uws-pack ${uwsPackVersion} build the patch is pinned to (sha256 ${sha256(bytes)})`);
    const patched = patchBinary(bytes);
    if (!patched || binaryVerdict(name, patched) !== "patched") throw new Error("the patched bytes do not match the pinned checksum");
    const temporary = `${file}.patching-${process.pid}`;
    writeFileSync(temporary, patched, { mode: statSync(file).mode });
    renameSync(temporary, file);
    console.log(`${name}: error pages rewritten as JSON`);
  } catch (error) {
    failed = true;
    console.error(`${name}: not patched: ${error instanceof Error ? error.message : String(error)}`);
  }
}
// As postinstall, a failure only warns (the gateway warns again at start):
// an unexpected uWS build must not make `npm install` fail.
if (failed && !process.argv.includes("--postinstall")) process.exitCode = 1;
