// A key's model allowlist as a filter (providers/router-allowlist.ts), built
// in process over the catalogue's entries: ids, globs and tiers, what a glob
// matches exactly (anchored, its other characters literal), the patterns kept
// for the 403, the filter built once per key record, and the request's
// allowlist in the async context. Fast on purpose: a mutation run
// (docs/testing.md) runs this file once per mutant; the allowlist over real
// sockets is in test/gateway/key-model-allowlist.test.ts.
import t from "tap";
import { Catalogue, type ModelEntry } from "../../providers/catalogue.ts";
import { allowlistOfKey, allowlistPatternHelp, currentModelAllowlist, modelFilterOf, patternsOf, withModelAllowlist, type ModelFilter } from "../../providers/router-allowlist.ts";

const catalogue = Catalogue.load();

function entry(id: string): ModelEntry {
  const e = catalogue.get(id);
  if (!e) throw new Error(`no catalogue model ${id}`);
  return e;
}

/** A catalogue entry under another id, to test what a glob matches. */
function named(id: string, tier: ModelEntry["tier"] = "large"): ModelEntry {
  return { ...entry("gpt-4.1-mini"), id, tier };
}

function filterOf(patterns: readonly string[]): ModelFilter {
  const f = modelFilterOf(patterns);
  if (!f) throw new Error("expected a filter");
  return f;
}

t.test("no patterns: no filter; an empty list refuses every model", async (t) => {
  t.equal(modelFilterOf(null), undefined);
  t.equal(modelFilterOf(undefined), undefined);
  const none = filterOf([]);
  t.equal(none(entry("gpt-4.1-mini")), false);
  t.same(patternsOf(none), []);
});

t.test("a model id allows that model only", async (t) => {
  const f = filterOf(["gpt-4.1-mini"]);
  t.equal(f(entry("gpt-4.1-mini")), true);
  t.equal(f(entry("claude-haiku-4-5")), false);
  t.equal(f(named("gpt-4.1-mini-2")), false, "an id is not a prefix");
  t.equal(f(named("gpt-4.1-min", "medium")), false);
});

t.test("a tier allows every model of that tier", async (t) => {
  const f = filterOf(["tier:medium"]);
  t.equal(entry("claude-haiku-4-5").tier, "medium");
  t.equal(f(entry("claude-haiku-4-5")), true);
  t.equal(f(named("anything", "medium")), true);
  t.equal(f(named("anything", "large")), false);
  t.equal(f(named("tier:medium", "large")), false, "a tier pattern is not a model id");
  t.equal(filterOf(["medium"])(named("x", "medium")), false, "a bare tier name is a model id");
});

t.test("a glob: * for any run of characters, anchored at both ends, every other character literal", async (t) => {
  const f = filterOf(["gpt-4.1*"]);
  t.equal(f(named("gpt-4.1")), true, "* may match nothing");
  t.equal(f(named("gpt-4.1-mini")), true);
  t.equal(f(named("gpt-431-mini")), false, "the dot is a dot");
  t.equal(f(named("my-gpt-4.1")), false, "anchored at the start");
  const middle = filterOf(["claude-*-4-5"]);
  t.equal(middle(named("claude-haiku-4-5")), true);
  t.equal(middle(named("claude-haiku-4-5-x")), false, "anchored at the end");
  t.equal(middle(named("claude-haiku-4-6")), false);
  const special = filterOf(["a+b(c)?[d]{e}|f^g$h\\i/j*"]);
  t.equal(special(named("a+b(c)?[d]{e}|f^g$h\\i/j-1")), true, "regular-expression characters are literal");
  t.equal(special(named("aab(c)?[d]{e}|f^g$h\\i/j")), false);
  t.equal(special(named("abc")), false);
  const two = filterOf(["*-mini*"]);
  t.equal(two(named("gpt-4.1-mini")), true, "more than one *");
  t.equal(two(named("o4-mini-high")), true);
  t.equal(two(named("gpt-4.1")), false);
});

t.test("patterns of each kind together: any of them allows", async (t) => {
  const f = filterOf(["claude-haiku-4-5", "gemini-*", "tier:large"]);
  t.equal(f(entry("claude-haiku-4-5")), true);
  t.equal(f(entry("gemini-2.5-flash")), true);
  t.equal(f(named("big", "large")), true);
  t.equal(f(named("small-one", "small")), false);
  t.same(patternsOf(f), ["claude-haiku-4-5", "gemini-*", "tier:large"]);
});

t.test("the patterns kept for the 403 are a copy; a filter made elsewhere has none", async (t) => {
  const patterns = ["gpt-4.1-mini"];
  const f = filterOf(patterns);
  patterns.push("claude-haiku-4-5");
  t.same(patternsOf(f), ["gpt-4.1-mini"]);
  t.equal(f(entry("claude-haiku-4-5")), false, "the filter is fixed when built");
  t.equal(patternsOf(() => true), undefined);
});

t.test("a key record's filter is built once, per record's models", async (t) => {
  t.equal(allowlistOfKey({ models: null }), undefined);
  const models = ["gpt-4.1-mini"];
  const first = allowlistOfKey({ models });
  t.ok(first);
  t.equal(allowlistOfKey({ models }), first, "the same models: the same filter");
  const other = allowlistOfKey({ models: ["gpt-4.1-mini"] });
  t.not(other, first, "another record's models: another filter");
  t.equal(first?.(entry("gpt-4.1-mini")), true);
  t.equal(first?.(entry("claude-haiku-4-5")), false);
});

t.test("the request's allowlist holds inside withModelAllowlist only, across awaits", async (t) => {
  const f = filterOf(["gpt-4.1-mini"]);
  t.equal(currentModelAllowlist(), undefined);
  const seen = await withModelAllowlist(f, async () => {
    await new Promise((resolve) => setTimeout(resolve, 1));
    return currentModelAllowlist();
  });
  t.equal(seen, f);
  t.equal(withModelAllowlist(f, () => "answer"), "answer", "the function's result is returned");
  t.equal(currentModelAllowlist(), undefined);
});

t.test("the help the key routes' 400 and schema give names each form a pattern takes", async (t) => {
  t.match(allowlistPatternHelp, /model id/);
  t.match(allowlistPatternHelp, /glob with \* \(gpt-4\.1\*, claude-\*\)/);
  t.match(allowlistPatternHelp, /tier:small, tier:medium, tier:large/);
});
