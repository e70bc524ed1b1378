// A built-in tool's result is held to AGENT_MESSAGE_MAX_BYTES, as a
// caller's tool output is: search_memory with top_k 100 over 32 KB records
// answered 3.2 MB, which the turn then kept and sent to the model at every
// later step. What is cut says so in the result itself (docs/api/agents.md,
// "Built-in tools"), in JSON the model can read:
// - search_memory keeps whole records, closest first, while they fit, and
//   adds `truncated: {omitted_results, limit_bytes, note}`; when not even the
//   closest record fits, its content is cut (`content_truncated: true`);
// - any other result past the limit becomes `{truncated: {original_bytes,
//   limit_bytes}, head}`, `head` being its beginning.

/** A search_memory record as the tool answers it. */
export interface MemoryResult {
  id: string;
  content: string;
  metadata: Record<string, unknown>;
  distance: number;
}

function bytesOf(text: string): number {
  return Buffer.byteLength(text);
}

/**
 * The longest prefix of `text` whose JSON string (quotes included) takes at
 * most `budget` bytes; never splits a surrogate pair.
 */
export function prefixWithinJsonBytes(text: string, budget: number): string {
  if (bytesOf(JSON.stringify(text)) <= budget) return text;
  // A prefix never ends in the first half of a surrogate pair (JSON would
  // escape it as six bytes), so its JSON grows with its length.
  const prefix = (length: number): string => {
    const last = text.charCodeAt(length - 1);
    return text.slice(0, last >= 0xd800 && last <= 0xdbff ? length - 1 : length);
  };
  let low = 0;
  // JSON writes every UTF-16 unit as at least one byte.
  let high = Math.min(text.length, budget);
  // The longest length whose JSON fits, found by halving.
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (bytesOf(JSON.stringify(prefix(mid))) <= budget) low = mid;
    else high = mid - 1;
  }
  return prefix(low);
}

function searchMarker(omitted: number, maxBytes: number) {
  return { omitted_results: omitted, limit_bytes: maxBytes, note: "the closest results that fit are shown; search with a smaller top_k or a narrower query for the others" };
}

/**
 * search_memory's result within `maxBytes` (undefined: whole). Each record
 * is serialized once, and none past the first that does not fit (100
 * records of 32 KB are 3.2 MB of JSON, of which 256 KiB are kept).
 */
export function searchResultText(results: readonly MemoryResult[], maxBytes: number | undefined): string {
  if (maxBytes === undefined) return JSON.stringify({ results });
  const wholeFrame = bytesOf('{"results":[]}');
  // The frame with every result omitted has the longest count, so it bounds the frame for any count.
  const frame = bytesOf(`{"results":[],"truncated":${JSON.stringify(searchMarker(results.length, maxBytes))}}`);
  const parts: string[] = [];
  let used = 0;
  /** How many records fit beside the marker; -1 while they all do. */
  let besideMarker = -1;
  for (const result of results) {
    const part = JSON.stringify(result);
    const adding = bytesOf(part) + (parts.length > 0 ? 1 : 0);
    if (besideMarker === -1 && frame + used + adding > maxBytes) besideMarker = parts.length;
    if (wholeFrame + used + adding > maxBytes) break;
    parts.push(part);
    used += adding;
  }
  if (parts.length === results.length) return `{"results":[${parts.join(",")}]}`;
  const kept = parts.slice(0, besideMarker);
  const first = results[0];
  if (kept.length === 0 && first) {
    const empty = { ...first, content: "", content_truncated: true };
    const contentBudget = maxBytes - frame - bytesOf(JSON.stringify(empty)) + 2;
    if (contentBudget >= 2) kept.push(JSON.stringify({ ...empty, content: prefixWithinJsonBytes(first.content, contentBudget) }));
  }
  return `{"results":[${kept.join(",")}],"truncated":${JSON.stringify(searchMarker(results.length - kept.length, maxBytes))}}`;
}

/** Any tool result within `maxBytes` (undefined: whole): past it, its beginning under a marker. */
export function boundToolResult(text: string, maxBytes: number | undefined): string {
  if (maxBytes === undefined) return text;
  const original = bytesOf(text);
  if (original <= maxBytes) return text;
  const marker = { truncated: { original_bytes: original, limit_bytes: maxBytes }, head: "" };
  const headBudget = maxBytes - bytesOf(JSON.stringify(marker)) + 2;
  return JSON.stringify({ ...marker, head: headBudget >= 2 ? prefixWithinJsonBytes(text, headBudget) : "" });
}
