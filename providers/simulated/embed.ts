// Simulated embeddings: a hashed bag of words and word bigrams (feature
// hashing with a sign bit), L2-normalized. Texts sharing words get a higher
// cosine similarity than texts that share none; identical texts are identical.
import type { EmbedRequest, EmbedResult } from "../types.ts";
import { countTokens } from "../tokens.ts";
import { fnv1a } from "./hash.ts";

export const simulatedEmbeddingDimensions = 256;

export function simulatedVector(text: string, dimensions = simulatedEmbeddingDimensions): number[] {
  const v = new Array<number>(dimensions).fill(0);
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const add = (feature: string, weight: number) => {
    const h = fnv1a(feature);
    v[h % dimensions]! += (h & 0x80000000 ? -1 : 1) * weight;
  };
  for (let i = 0; i < words.length; i++) {
    add(`w:${words[i]}`, 1);
    if (i > 0) add(`b:${words[i - 1]} ${words[i]}`, 0.5);
  }
  let norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  // A text with no words still gets a valid unit vector (cosine needs a non-zero norm).
  if (norm === 0) {
    v[fnv1a(text) % dimensions] = 1;
    norm = 1;
  }
  return v.map((x) => x / norm);
}

export function simulatedEmbed(provider: string, req: EmbedRequest): EmbedResult {
  const dimensions = req.dimensions ?? simulatedEmbeddingDimensions;
  return {
    embeddings: req.input.map((t) => simulatedVector(t, dimensions)),
    dimensions,
    model: req.model,
    provider,
    input_tokens: req.input.reduce((n, t) => n + countTokens(t), 0),
  };
}
