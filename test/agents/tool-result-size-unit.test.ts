// The exact boundaries of a built-in tool result's bound
// (actors/conversation/tool-result-size.ts), beside the properties in
// tool-result-size.test.ts:
// - prefixWithinJsonBytes gives the longest prefix whose JSON fits, for every
//   budget from 0 to past the whole text, on plain text, six-byte escapes,
//   three-byte characters and surrogate pairs (never half of one);
// - search_memory keeps every record while they fit exactly (the commas
//   counted), keeps only those that fit beside the marker once one is cut,
//   and cuts the closest record's content to fill the limit to the byte;
// - any other result past its limit is its head filling the limit exactly,
//   or the bare marker when not even an empty head fits.
import t from "tap";
import { boundToolResult, prefixWithinJsonBytes, searchResultText, type MemoryResult } from "../../actors/conversation/tool-result-size.ts";

const bytes = (s: string) => Buffer.byteLength(s);
const jsonBytes = (s: string) => bytes(JSON.stringify(s));
const record = (i: number, content: string): MemoryResult => ({ id: `rec_${i}`, content, metadata: {}, distance: 0.5 });

/** The longest prefix, found by trying every length: the reference the halving search must equal. */
function longestPrefix(text: string, budget: number): string {
  for (let length = text.length; length > 0; length--) {
    const last = text.charCodeAt(length - 1);
    if (last >= 0xd800 && last <= 0xdbff) continue;
    if (jsonBytes(text.slice(0, length)) <= budget) return text.slice(0, length);
  }
  return "";
}

t.test("prefixWithinJsonBytes: the longest prefix whose JSON fits, for every budget", async (t) => {
  const texts = ["hello world", "a\u0001b\u0002c", "€uro €uro", "🎬a🎬b🎬", 'q"u\\o"te', "x"];
  for (const text of texts) {
    let wrong = 0;
    for (let budget = 0; budget <= jsonBytes(text) + 2; budget++) {
      if (prefixWithinJsonBytes(text, budget) !== longestPrefix(text, budget)) wrong++;
    }
    t.equal(wrong, 0, `${JSON.stringify(text)}: every budget`);
    t.equal(prefixWithinJsonBytes(text, jsonBytes(text)), text, "exactly the whole text's JSON: whole");
  }
  t.equal(prefixWithinJsonBytes("🎬", 5), "", "never half of a surrogate pair");
  t.equal(prefixWithinJsonBytes("a🎬b", 6), "a", "the pair is left out whole");
  t.equal(prefixWithinJsonBytes("a🎬b", 7), "a🎬");
});

/** The marker a cut search result ends with, as the module writes it for `omitted` records. */
function markerFor(results: MemoryResult[], maxBytes: number): string {
  const cut = JSON.parse(searchResultText(results, 1)) as { truncated: Record<string, unknown> };
  return JSON.stringify({ ...cut.truncated, omitted_results: results.length, limit_bytes: maxBytes });
}

t.test("search_memory: every record while they fit exactly, the commas counted", async (t) => {
  const results = [record(0, "a".repeat(50)), record(1, "b".repeat(50)), record(2, "c".repeat(50))];
  const whole = JSON.stringify({ results });
  t.equal(searchResultText(results, bytes(whole)), whole, "exactly the limit: whole, no marker");
  const cut = JSON.parse(searchResultText(results, bytes(whole) - 1)) as { results: MemoryResult[]; truncated: { omitted_results: number } };
  t.ok(cut.truncated.omitted_results >= 1, "one byte less: a record is left out");
  t.equal(searchResultText(results.slice(0, 1), bytes(JSON.stringify({ results: results.slice(0, 1) }))), JSON.stringify({ results: results.slice(0, 1) }));
  t.equal(searchResultText([], 14), '{"results":[]}', "no result: the empty frame");
});

t.test("search_memory: once one is cut, only the records that fit beside the marker", async (t) => {
  const results = [record(0, "a".repeat(100)), record(1, "b".repeat(100)), record(2, "c".repeat(100)), record(3, "d".repeat(5000))];
  const three = JSON.stringify({ results: results.slice(0, 3) });
  // Room for three records without a marker, but the fourth is left out, so a marker is needed, and beside it only some fit.
  const text = searchResultText(results, bytes(three));
  t.ok(bytes(text) <= bytes(three), `within the limit (${bytes(text)} of ${bytes(three)})`);
  const parsed = JSON.parse(text) as { results: MemoryResult[]; truncated: { omitted_results: number; limit_bytes: number } };
  const frame = bytes(`{"results":[],"truncated":${markerFor(results, bytes(three))}}`);
  const fitting = results.slice(0, 3).filter((_, i) => frame + bytes(results.slice(0, i + 1).map((r) => JSON.stringify(r)).join(",")) <= bytes(three)).length;
  t.ok(fitting < 3, "the case is one where the marker pushes a record out");
  t.same(parsed.results.map((r) => r.id), results.slice(0, fitting).map((r) => r.id));
  t.equal(parsed.truncated.omitted_results, 4 - fitting);

  // Exactly the records and the marker: all kept beside it; one byte less: one fewer.
  const two = results.slice(0, 2).map((r) => JSON.stringify(r)).join(",");
  const exact = frame + bytes(two);
  const atExact = JSON.parse(searchResultText(results, exact)) as { results: MemoryResult[] };
  t.equal(atExact.results.length, 2, "two records and the marker fit exactly");
  const below = JSON.parse(searchResultText(results, exact - 1)) as { results: MemoryResult[] };
  t.equal(below.results.length, 1, "one byte less: one record beside the marker");
});

t.test("search_memory: the closest record's content is cut to fill the limit to the byte", async (t) => {
  const results = [record(0, "z".repeat(4000)), record(1, "y")];
  const maxBytes = 1500;
  const text = searchResultText(results, maxBytes);
  t.equal(bytes(text), maxBytes, "plain text fills the limit exactly");
  const parsed = JSON.parse(text) as { results: Array<MemoryResult & { content_truncated: boolean }>; truncated: { omitted_results: number } };
  t.equal(parsed.results[0]?.content_truncated, true);
  t.equal(parsed.truncated.omitted_results, 1);

  // The smallest limit that still keeps the record, with an empty content; one byte less keeps none.
  const empty = JSON.stringify({ ...results[0], content: "", content_truncated: true });
  // The marker names the limit, so settle the limit on its own digits.
  let least = 1000;
  for (let i = 0; i < 3; i++) least = bytes(`{"results":[],"truncated":${markerFor(results, least)}}`) + bytes(empty);
  const kept = JSON.parse(searchResultText(results, least)) as { results: Array<{ content: string }> };
  t.same(kept.results.map((r) => r.content), [""], "an empty content fits exactly");
  const none = JSON.parse(searchResultText(results, least - 1)) as { results: unknown[]; truncated: { omitted_results: number } };
  t.same(none.results, [], "one byte less: no record");
  t.equal(none.truncated.omitted_results, 2);
});

t.test("any other result: its head fills the limit exactly; the bare marker when not even that fits", async (t) => {
  const text = "k".repeat(1000);
  t.equal(boundToolResult(text, undefined), text);
  t.equal(boundToolResult(text, 1000), text, "exactly the limit: whole");
  const cut = boundToolResult(text, 999);
  t.equal(bytes(cut), 999, "one byte less: the head fills the limit");
  t.same(JSON.parse(cut), { truncated: { original_bytes: 1000, limit_bytes: 999 }, head: "k".repeat(999 - bytes('{"truncated":{"original_bytes":1000,"limit_bytes":999},"head":""}')) });
  t.same(JSON.parse(boundToolResult(text, 10)), { truncated: { original_bytes: 1000, limit_bytes: 10 }, head: "" }, "too small for any head");
  const least = bytes('{"truncated":{"original_bytes":1000,"limit_bytes":60},"head":""}');
  t.same(JSON.parse(boundToolResult(text, least)), { truncated: { original_bytes: 1000, limit_bytes: least }, head: "" });
});
