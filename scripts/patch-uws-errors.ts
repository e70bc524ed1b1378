// `npm run patch:uws [dir]` (also npm's postinstall): rewrites the HTML error
// pages compiled into uWS's Linux binaries as JSON error bodies of the same
// length (why and how: gateway/uws-error-pages.ts). Idempotent. Each file
// is written beside the original and renamed over it, so a process that
// has the old one loaded keeps its mapping intact. macOS and Windows
// binaries are left alone: changing a signed binary breaks its signature.
import { readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { loadedUwsBinary, patchBinary } from "../gateway/uws-error-pages.ts";

// The directory of the binaries: uWebSockets.js's own unless given (tests patch a copy).
const bin = process.argv.slice(2).find((a) => !a.startsWith("--")) ?? dirname(loadedUwsBinary());
let failed = false;
for (const name of readdirSync(bin).filter((n) => /^uws_linux_.*\.node$/.test(n)).sort()) {
  const file = join(bin, name);
  try {
    const patched = patchBinary(readFileSync(file));
    if (!patched) {
      console.log(`${name}: already JSON`);
      continue;
    }
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
