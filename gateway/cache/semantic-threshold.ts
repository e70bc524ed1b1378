// Choosing the semantic cache's threshold: precision and recall of "serve
// the cached answer" over labelled pairs of questions (same meaning or not)
// at candidate cosine thresholds. Precision is what matters: a false hit
// answers a user's question with the answer to another question. Shared by
// the precision test (the simulated model) and bench/semantic-threshold.ts
// (any model of a live Troupe), so both read the fixture and count alike.
import { z } from "zod";

export const labelledPairsSchema = z.object({
  description: z.string().optional(),
  pairs: z
    .array(z.object({ a: z.string().min(1).max(4096), b: z.string().min(1).max(4096), same_meaning: z.boolean(), category: z.string().min(1) }).strict())
    .min(1)
    .max(100_000),
});
export type LabelledPair = z.infer<typeof labelledPairsSchema>["pairs"][number];

export interface ThresholdRow {
  threshold: number;
  /** Same-meaning pairs served (true hits). */
  truePositives: number;
  /** Different-meaning pairs served: wrong answers. */
  falsePositives: number;
  /** Same-meaning pairs not served (a provider call that could have been saved). */
  falseNegatives: number;
  /** tp / (tp + fp); 1 when nothing is served (no wrong answer). */
  precision: number;
  /** tp / (tp + fn). */
  recall: number;
  /** The different-meaning pairs served, by category, for the table. */
  falseHitsByCategory: Record<string, number>;
}

/** 0.80 to 0.99 by 0.01: finer than any embedding model's noise, coarse enough to read. */
export const candidateThresholds: readonly number[] = Array.from({ length: 20 }, (_, i) => Math.round((0.8 + i * 0.01) * 100) / 100);

/** A row per threshold; `similarities[i]` is the cosine of pair i's two questions. A pair is served when its cosine reaches the threshold. */
export function thresholdTable(pairs: readonly LabelledPair[], similarities: readonly number[], thresholds: readonly number[] = candidateThresholds): ThresholdRow[] {
  if (similarities.length !== pairs.length) throw new Error(`${pairs.length} pairs but ${similarities.length} similarities`);
  return thresholds.map((threshold) => {
    let truePositives = 0;
    let falsePositives = 0;
    let falseNegatives = 0;
    const falseHitsByCategory: Record<string, number> = {};
    pairs.forEach((pair, i) => {
      const served = (similarities[i] as number) >= threshold;
      if (pair.same_meaning && served) truePositives++;
      else if (pair.same_meaning) falseNegatives++;
      else if (served) {
        falsePositives++;
        falseHitsByCategory[pair.category] = (falseHitsByCategory[pair.category] ?? 0) + 1;
      }
    });
    const precision = truePositives + falsePositives === 0 ? 1 : truePositives / (truePositives + falsePositives);
    const recall = truePositives + falseNegatives === 0 ? 0 : truePositives / (truePositives + falseNegatives);
    return { threshold, truePositives, falsePositives, falseNegatives, precision, recall, falseHitsByCategory };
  });
}

/** The lowest threshold (so the most hits) whose precision reaches `minPrecision` and that serves something; undefined when none does. */
export function chooseThreshold(rows: readonly ThresholdRow[], minPrecision: number): ThresholdRow | undefined {
  const ok = rows.filter((r) => r.precision >= minPrecision && r.truePositives > 0);
  return ok.sort((a, b) => b.recall - a.recall || a.threshold - b.threshold)[0];
}

export function formatThresholdTable(rows: readonly ThresholdRow[], chosen?: number): string {
  const lines = ["threshold  precision  recall  hits  false-hits  false hits by category"];
  for (const r of rows) {
    const categories = Object.entries(r.falseHitsByCategory).map(([c, n]) => `${c}:${n}`).join(" ");
    lines.push(
      `${r.threshold.toFixed(2).padStart(9)}  ${r.precision.toFixed(3).padStart(9)}  ${r.recall.toFixed(3).padStart(6)}  ${String(r.truePositives).padStart(4)}  ${String(r.falsePositives).padStart(10)}  ${categories}${r.threshold === chosen ? "  <- chosen" : ""}`,
    );
  }
  return lines.join("\n");
}

/** Cosine similarity of two vectors (not assumed normalised). */
export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) throw new Error(`vectors of ${a.length} and ${b.length} dimensions`);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
