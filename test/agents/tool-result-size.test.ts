// A built-in tool's result within AGENT_MESSAGE_MAX_BYTES
// (actors/conversation/tool-result-size.ts): always within the limit, always
// JSON, and saying what was cut, whatever the text (JSON's six-byte escapes,
// emoji that must not be split).
import t from "tap";
import { boundToolResult, prefixWithinJsonBytes, searchResultText, type MemoryResult } from "../../actors/conversation/tool-result-size.ts";

const record = (i: number, content: string): MemoryResult => ({ id: `rec_${i}`, content, metadata: { n: i }, distance: i / 10 });
const bytes = (s: string) => Buffer.byteLength(s);

t.test("search results: whole records closest first while they fit, then a marker counting the rest", async (t) => {
  const results = Array.from({ length: 10 }, (_, i) => record(i, "x".repeat(1000)));
  t.equal(searchResultText(results, undefined), JSON.stringify({ results }), "no limit: whole");
  t.equal(searchResultText(results, 100_000), JSON.stringify({ results }), "within the limit: whole, no marker");
  const cut = JSON.parse(searchResultText(results, 4096)) as { results: MemoryResult[]; truncated: { omitted_results: number; limit_bytes: number } };
  t.ok(bytes(searchResultText(results, 4096)) <= 4096);
  t.same(cut.results.map((r) => r.id), ["rec_0", "rec_1", "rec_2"]);
  t.match(cut.truncated, { omitted_results: 7, limit_bytes: 4096, note: /smaller top_k/ });
});

t.test("when not even the closest record fits, its content is cut and says so", async (t) => {
  for (const filler of ["x", "\u0001", "🎬", "€", '"']) {
    const text = searchResultText([record(0, filler.repeat(5000)), record(1, "y")], 2048);
    t.ok(bytes(text) <= 2048, `${JSON.stringify(filler)}: ${bytes(text)} bytes`);
    const parsed = JSON.parse(text) as { results: (MemoryResult & { content_truncated?: boolean })[]; truncated: { omitted_results: number } };
    t.equal(parsed.results.length, 1);
    t.equal(parsed.results[0]?.content_truncated, true);
    t.ok((parsed.results[0]?.content.length ?? 0) > 0, "some of the content is kept");
    t.notMatch(parsed.results[0]?.content ?? "", /[\ud800-\udbff]$/, "no half of a surrogate pair at the end");
    t.equal(parsed.truncated.omitted_results, 1);
  }
});

t.test("any other result past the limit keeps its beginning under a marker", async (t) => {
  t.equal(boundToolResult('{"stored":true}', 1024), '{"stored":true}');
  const long = JSON.stringify({ error: "e".repeat(10_000) });
  const bounded = boundToolResult(long, 1024);
  t.ok(bytes(bounded) <= 1024);
  const parsed = JSON.parse(bounded) as { truncated: { original_bytes: number; limit_bytes: number }; head: string };
  t.same(parsed.truncated, { original_bytes: bytes(long), limit_bytes: 1024 });
  t.ok(long.startsWith(parsed.head) && parsed.head.length > 500, "the head is the result's beginning");
});

t.test("prefixWithinJsonBytes: the longest prefix whose JSON fits", async (t) => {
  for (const text of ["abc".repeat(100), "\u0001".repeat(100), "🎬".repeat(100), "é\"\\".repeat(100)]) {
    for (const budget of [2, 3, 10, 77, 300]) {
      const prefix = prefixWithinJsonBytes(text, budget);
      t.ok(text.startsWith(prefix));
      t.ok(bytes(JSON.stringify(prefix)) <= budget, `${budget}: ${bytes(JSON.stringify(prefix))}`);
      const longer = text.slice(0, prefix.length + ((text.codePointAt(prefix.length) ?? 0) > 0xffff ? 2 : 1));
      if (longer !== text) t.ok(bytes(JSON.stringify(longer)) > budget, "one more character would not fit");
    }
  }
});
