// A limit on how deep a JSON body nests (docs/api/errors-and-limits.md: at most 64 levels
// anywhere). V8's JSON.parse copes with any depth, but everything after it
// recurses: JSON.stringify of `metadata` 6,000 deep overflowed the stack
// (500), zod and the provider adapters too (502). The check scans the raw
// bytes once, with a counter instead of recursion; only a body that fails
// gets a second pass to name the field where it goes too deep.

export const maxJsonDepth = 64;

const quote = 0x22;
const backslash = 0x5c;
const openBrace = 0x7b;
const closeBrace = 0x7d;
const openBracket = 0x5b;
const closeBracket = 0x5d;
const comma = 0x2c;

/** Byte offset of the first container opened deeper than maxDepth, or -1. */
export function tooDeepAt(raw: Uint8Array, maxDepth = maxJsonDepth): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (inString) {
      if (c === backslash) i++;
      else if (c === quote) inString = false;
    } else if (c === quote) inString = true;
    else if (c === openBrace || c === openBracket) {
      depth++;
      if (depth > maxDepth) return i;
    } else if (c === closeBrace || c === closeBracket) depth--;
  }
  return -1;
}

/**
 * The field path (`metadata.a.0.b`) of the container opened at `offset`,
 * read from the raw text up to there. Keys are taken as written (escapes
 * decoded when they are valid JSON strings).
 */
export function pathAt(raw: Uint8Array, offset: number): string[] {
  // One frame per open container: its kind and the key or index of the child being read.
  const frames: { array: boolean; key: string; index: number; expectKey: boolean }[] = [];
  for (let i = 0; i < offset; i++) {
    const c = raw[i];
    const top = frames[frames.length - 1];
    if (c === quote) {
      const start = i;
      for (i++; i < raw.length && raw[i] !== quote; i++) if (raw[i] === backslash) i++;
      if (top && !top.array && top.expectKey) {
        top.key = decodeKey(raw.subarray(start, i + 1));
        top.expectKey = false;
      }
    } else if (c === openBrace || c === openBracket) frames.push({ array: c === openBracket, key: "", index: 0, expectKey: c === openBrace });
    else if (c === closeBrace || c === closeBracket) frames.pop();
    else if (c === comma && top) {
      if (top.array) top.index++;
      else top.expectKey = true;
    }
  }
  return frames.map((f) => (f.array ? String(f.index) : f.key));
}

function decodeKey(quoted: Uint8Array): string {
  const text = Buffer.from(quoted.buffer, quoted.byteOffset, quoted.byteLength).toString("utf8");
  try {
    const key: unknown = JSON.parse(text);
    return typeof key === "string" ? key : text;
  } catch {
    return text.slice(1, -1);
  }
}
