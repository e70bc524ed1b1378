// Measures the semantic cache's threshold for a real embedding model: embeds
// both questions of every labelled pair (test/fixtures/semantic-cache-pairs.json,
// or --pairs FILE) through a live Troupe's POST /v1/embeddings with that
// model, and prints precision and recall at thresholds 0.80–0.99 with the
// lowest threshold reaching --min-precision (default 0.95). Set the project's
// semantic threshold to it (docs/guides/caching.md, "Semantic cache"). The
// embeddings are billed to the key's project like any other call (about
// 2 × pairs short texts).
//
//   TROUPE_API_KEY=... node bench/semantic-threshold.ts --model text-embedding-3-small \
//     [--url http://127.0.0.1:8080] [--pairs FILE] [--min-precision 0.95] [--batch 64]
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { z } from "zod";
import { chooseThreshold, cosineSimilarity, formatThresholdTable, labelledPairsSchema, thresholdTable } from "../gateway/cache/semantic-threshold.ts";

const { values: args } = parseArgs({
  options: {
    model: { type: "string" },
    url: { type: "string", default: "http://127.0.0.1:8080" },
    pairs: { type: "string", default: new URL("../test/fixtures/semantic-cache-pairs.json", import.meta.url).pathname },
    "min-precision": { type: "string", default: "0.95" },
    batch: { type: "string", default: "64" },
  },
});
const apiKey = process.env["TROUPE_API_KEY"];
if (!args.model || !apiKey) {
  console.error("usage: TROUPE_API_KEY=<key> node bench/semantic-threshold.ts --model <embedding model id> [--url URL] [--pairs FILE]");
  process.exit(2);
}
const minPrecision = Number(args["min-precision"]);
const batch = Number(args.batch);
const { pairs } = labelledPairsSchema.parse(JSON.parse(await readFile(args.pairs, "utf8")));

const embeddingsSchema = z.object({ embeddings: z.array(z.array(z.number())), model: z.string(), provider: z.string() });
const texts = [...new Set(pairs.flatMap((p) => [p.a, p.b]))];
const vectors = new Map<string, number[]>();
let servedBy = "";
for (let from = 0; from < texts.length; from += batch) {
  const input = texts.slice(from, from + batch);
  const response = await fetch(`${args.url.replace(/\/$/, "")}/v1/embeddings`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    // routing manual: the model named is the model measured, never a fallback.
    body: JSON.stringify({ model: args.model, routing_strategy: "manual", input }),
  });
  if (!response.ok) throw new Error(`POST /v1/embeddings answered ${response.status}: ${await response.text()}`);
  const body = embeddingsSchema.parse(await response.json());
  servedBy = `${body.model} (${body.provider})`;
  input.forEach((text, i) => vectors.set(text, body.embeddings[i] ?? []));
}
const similarities = pairs.map((p) => cosineSimilarity(vectors.get(p.a) ?? [], vectors.get(p.b) ?? []));
const rows = thresholdTable(pairs, similarities);
const chosen = chooseThreshold(rows, minPrecision);
console.log(`${servedBy} on ${pairs.length} labelled pairs (${pairs.filter((p) => p.same_meaning).length} same meaning)`);
console.log(formatThresholdTable(rows, chosen?.threshold));
console.log(chosen ? `chosen threshold ${chosen.threshold}: precision ${chosen.precision.toFixed(3)}, recall ${chosen.recall.toFixed(3)}` : `no threshold from 0.80 to 0.99 reaches precision ${minPrecision}: keep semantic off for this model`);
