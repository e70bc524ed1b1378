// The embedded partition's int8 step must never change a result: its answers
// are compared with a plain float32 scan, and the error bound it relies on
// (usearch's int8 cosine against float64 arithmetic) is checked directly.
import t from "tap";
import usearch from "usearch";
import { loadUsearch, VectorPartition } from "../../vectors/embedded-partition.ts";
import { seededRandom } from "../support/seeded-random.ts";

function unit(random: () => number, d: number, around?: Float32Array): Float32Array {
  const v = new Float32Array(d);
  let s = 0;
  for (let i = 0; i < d; i++) {
    v[i] = (around ? (around[i] as number) * 3 : 0) + random() * 2 - 1;
    s += (v[i] as number) ** 2;
  }
  for (let i = 0; i < d; i++) v[i] = (v[i] as number) / Math.sqrt(s);
  return v;
}

t.test("int8 candidates + float32 rescoring return exactly the float32 answer", async (t) => {
  const d = 96;
  const random = seededRandom(42);
  const quantized = new VectorPartition(d, { kernel: "usearch", quantizeFromRows: 1 });
  const early = new VectorPartition(d, { kernel: "usearch" });
  early.upsert({ id: "x", content: "", metadataJson: "{}", model: "m" }, unit(random, d));
  t.throws(() => early.searchExact(unit(random, d), 1), /usearch is not loaded/, "a usearch search before loadUsearch() is a programming error");
  await loadUsearch();
  const plain = new VectorPartition(d, { kernel: "js" });
  const centres = Array.from({ length: 8 }, () => unit(random, d));
  for (let i = 0; i < 5000; i++) {
    const v = unit(random, d, centres[i % 8]);
    const entry = { id: `r${i}`, content: "", metadataJson: "{}", model: "m" };
    quantized.upsert(entry, v);
    plain.upsert(entry, v);
  }
  for (let i = 0; i < 500; i++) {
    quantized.remove(`r${i * 7}`);
    plain.remove(`r${i * 7}`);
  }
  for (let q = 0; q < 60; q++) {
    const query = unit(random, d, q % 2 ? centres[q % 8] : undefined);
    for (const k of [1, 10, 100]) {
      const a = quantized.searchExact(query, k);
      const b = plain.searchExact(query, k);
      t.equal(a.length, k);
      // Exact ties may swap ids; compare the scores and each id's own score.
      for (let i = 0; i < k; i++) {
        if (Math.abs((a[i]?.cosine ?? 0) - (b[i]?.cosine ?? 1)) > 1e-6) {
          t.fail(`query ${q} k ${k} rank ${i}: ${a[i]?.cosine} vs ${b[i]?.cosine}`);
          return;
        }
      }
    }
  }
  t.pass("all 180 searches identical to the float32 scan");
  t.ok(quantized.stats.quantized === 180, "every search took the int8 path");
  t.comment(`fallbacks to float32: ${quantized.stats.fallbacks} of ${quantized.stats.quantized}`);
});

t.test("usearch's int8 cosine is within the partition's slack of float64", async (t) => {
  const d = 768;
  const random = seededRandom(7);
  const rows = 2000;
  const data = new Int8Array(rows * d);
  for (let i = 0; i < data.length; i++) data[i] = Math.round(random() * 254 - 127);
  const query = new Int8Array(d);
  for (let i = 0; i < d; i++) query[i] = Math.round(random() * 254 - 127);
  const matches = usearch.exactSearch(data, query, d, rows, usearch.MetricKind.Cos, 1);
  let worst = 0;
  for (let i = 0; i < matches.keys.length; i++) {
    const row = Number(matches.keys[i]);
    let dot = 0;
    let nq = 0;
    let nx = 0;
    for (let j = 0; j < d; j++) {
      const x = data[row * d + j] as number;
      const q = query[j] as number;
      dot += x * q;
      nq += q * q;
      nx += x * x;
    }
    worst = Math.max(worst, Math.abs(1 - dot / Math.sqrt(nq * nx) - (matches.distances[i] as number)));
  }
  t.ok(worst < 1e-4, `worst error ${worst.toExponential(2)} is well below the 1e-3 slack`);
});
