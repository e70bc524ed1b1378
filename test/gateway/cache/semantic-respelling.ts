// The semantic cache over HTTP, shared by the end-to-end tests (one Troupe on
// Elasticsearch, two Dapr replicas on Redis and Elasticsearch): asking
// respellings of a stored question until one is served by meaning. Several
// spellings because an Elasticsearch add is searchable only after its refresh
// (about 1 s) and the simulated embedding scores each respelling differently;
// one of them must clear the threshold.
import type { Test } from "tap";
import type { TestResponse } from "../../support/troupe.ts";

/** A pause for the index's refresh, before a vector just added can be found. */
export const settleIndex = () => new Promise((r) => setTimeout(r, 1_000));

/**
 * Asks each respelling in turn (after a refresh) until one is a semantic hit,
 * checks that hit's headers and that it made no provider call; a failure of
 * `t` when none is. Resolves to the hit (its body is the answer served),
 * undefined when none: a miss stores its own answer, so a later respelling
 * may hit that one; a caller that needs the first question's answer checks
 * the body.
 */
export async function respellingServedByMeaning(
  t: Test,
  label: string,
  ask: (content: string) => Promise<TestResponse>,
  respellings: readonly string[],
  providerCalls: () => number,
): Promise<TestResponse | undefined> {
  for (const spelling of respellings) {
    await settleIndex();
    const before = providerCalls();
    const answer = await ask(spelling);
    if (answer.headers.get("troupe-cache") !== "hit") continue;
    t.equal(answer.headers.get("troupe-cache-match"), "semantic", `${label}: a respelling served by meaning`);
    t.equal(answer.headers.get("troupe-cache-embedding-model"), "simulated-embed");
    t.equal(providerCalls() - before, 0, "no provider call");
    return answer;
  }
  t.fail(`${label}: no respelling was served from the cache`);
  return undefined;
}
