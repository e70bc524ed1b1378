// The uWebSockets.js binaries Troupe runs on, pinned by SHA-256. uWS is not
// on the npm registry under its own name; `uws-pack@20.0.8` repacks the
// official v20 release binaries, so a checksum is how we know the file is
// that build before and after scripts/patch-uws-errors.ts rewrites its
// error pages. `original` is the file as the package ships it, `patched` the
// same file after the patch (the patch is deterministic, so one value per
// file). Only the Linux binaries are patched (macOS/Windows are signed).
// A new uws-pack version needs these regenerated: `npm run patch:uws -- --print-pins <dir of the unpatched bin>`.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { basename } from "node:path";

export interface BinaryPin {
  original: string;
  patched: string;
}

export const uwsPackVersion = "20.0.8";

export const uwsBinaryPins: Readonly<Record<string, BinaryPin>> = {
  "uws_linux_arm64_108.node": { original: "a6820f6e868b615a0c616d9d77270b34893d05f2a7053046403a568697b8befc", patched: "d84ab5db838f2dcc2482be679f26dfbf581bdc01bcb3982690c4cbe3c3688c6a" },
  "uws_linux_arm64_115.node": { original: "c0e29fc143b46b584f3debec7910014ec228198fc1f17aaeacd1de7991bd3769", patched: "780da56710d75774d249a8c158917adbb029623f1594d5898d8821b7cc7ce2c6" },
  "uws_linux_arm64_120.node": { original: "a855e3b7cc0db70ec503e296d50e91d2435db679bc3bd5433d7dae30e93c9b3c", patched: "576ae7591bb466703a9ac7df1bd23a82053fe0f8fbf8e78a6486343cbf4f1191" },
  "uws_linux_arm64_127.node": { original: "d4c4f8b2c28c5f6544b49e36d91b0beee238a5b90a07904a947f77061c8b814d", patched: "44ee635e656267f1d701b5e381c7bbb7d4ba6d27cd17b56bd77c912acca54bf3" },
  "uws_linux_arm_108.node": { original: "a42c7e5ed3e65aa6a2c243613ef8b1cac7057ee6291a129f921dea4f6661e34e", patched: "0853aa805773bbb92cc841356447bdd562c22b5be8c58a2e35975b0f5255815e" },
  "uws_linux_arm_115.node": { original: "b02d5bc5ab08f040b6b9b818c3eb92806611f77a4dc2439a8f14cac827d498be", patched: "6b93b4c7212ce8925acf8a909eb31ca4af4177f785213db3c1ef7fdfdbaafc1e" },
  "uws_linux_arm_120.node": { original: "814b5e63337d5072a85276d5279824b4f9817f8008fcff1f4a4345e2f2c30444", patched: "2dc550b0224a50752222d22999e9f7658bc0d5e0af6e365501280dd131b2471a" },
  "uws_linux_arm_127.node": { original: "0e1d4024b629a1fe17ec76cde8fe7e320101eb8bdcf7b2c4086933932e3cea23", patched: "d51b5d532ebdb7ddd6c5d7e617fb83e87da6bc14c45db359edbe5c1e8e5531c4" },
  "uws_linux_x64_108.node": { original: "b67b3254b1acea464bd6f7b58403c260567c31924abeb6a508a9acdc17a40ce9", patched: "700caf703f4461d5a58879885d0aae3497db8f128de3ca9bd43c99c249a53f7c" },
  "uws_linux_x64_115.node": { original: "6f8d96d761a64beddb060f1f7f0e617dd293ed127ec1d57507aa561a0083171e", patched: "1fd645b4f582edfe1f2cbb28d00dd0f048a9c9b06c72de34a64cf3a0188fe592" },
  "uws_linux_x64_120.node": { original: "fcb1172837abd2a2dd130f6c6502f18e9b562a5d88bcc3bcdca5e6e710278080", patched: "81fb9e525ba45366c33e738e10d3ca54bf720156958079048bd10eb927a22f11" },
  "uws_linux_x64_127.node": { original: "8cabc918bbf9a07323e54f89a33882491080b2eb35df0607f473ccdb1f3c31af", patched: "9f63e1e659921c71a9a9623f853115c650df9d5cd9f246745ada92bfb6a77904" },
};

/** "patched": the pinned build with JSON error pages; "unpatched": the pinned build as shipped; "unknown": anything else (or unreadable). */
export type BinaryVerdict = "patched" | "unpatched" | "unknown";

export function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** What a binary is, judged by its name's pin and its bytes. */
export function binaryVerdict(name: string, bytes: Buffer): BinaryVerdict {
  const pin = uwsBinaryPins[name];
  if (pin === undefined) return "unknown";
  const digest = sha256(bytes);
  if (digest === pin.patched) return "patched";
  if (digest === pin.original) return "unpatched";
  return "unknown";
}

export function fileVerdict(file: string): BinaryVerdict {
  try {
    return binaryVerdict(basename(file), readFileSync(file));
  } catch {
    return "unknown";
  }
}

/** Why `npm start` must not start with this binary under `check`, or undefined when it may. */
export function startRefusal(check: "warn" | "refuse", file: string): string | undefined {
  if (check === "warn") return undefined;
  const verdict = fileVerdict(file);
  if (verdict === "patched") return undefined;
  const what = verdict === "unpatched" ? "has uWS's HTML error pages (run `npm run patch:uws`)" : `is not the uws-pack ${uwsPackVersion} build Troupe pins (reinstall it)`;
  return `${file} ${what}; UWS_BINARY_CHECK=refuse`;
}
