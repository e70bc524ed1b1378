// The semantic cache's defaults (docs/guides/caching.md, "Semantic cache").
// The threshold was chosen on test/fixtures/semantic-cache-pairs.json for the
// simulated provider's bag-of-words model, the only embedding model this
// project can run offline; a deployment with a real model measures its own
// with bench/semantic-threshold.ts and sets the project's threshold to it.

/** Cosine similarity the simulated-embed model needs for precision ≥ 0.95 on the fixture (semantic-precision.test.ts prints the table). */
export const SIMULATED_EMBED_THRESHOLD = 0.98;
