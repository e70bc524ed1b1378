// A partition's rows live in fixed-size pages (vectors/partition-pages.ts).
// With a small page size, inserts cross several pages, removals move the last
// row into holes on other pages, and every exact kernel (the JS loop, usearch
// float32, int8 candidates rescored in float32) must still answer what a
// brute force over the same vectors answers, and exactly what one page
// holding every row answers.
import t from "tap";
import { loadUsearch, VectorPartition, type PartitionHit, type PartitionOptions } from "../../vectors/embedded-partition.ts";
import { GraphWorker } from "../../vectors/graph-worker-client.ts";
import { defaultGraphSettings } from "../../vectors/partition-graph.ts";
import { dot, vectorChecksum } from "../../vectors/partition-math.ts";
import { seededRandom } from "../support/seeded-random.ts";

const d = 32;

function unit(random: () => number, around?: Float32Array): Float32Array {
  const v = new Float32Array(d);
  let s = 0;
  for (let i = 0; i < d; i++) {
    v[i] = (around ? (around[i] as number) * 2 : 0) + random() * 2 - 1;
    s += (v[i] as number) ** 2;
  }
  for (let i = 0; i < d; i++) v[i] = (v[i] as number) / Math.sqrt(s);
  return v;
}

function bruteForce(vectors: ReadonlyMap<string, Float32Array>, query: Float32Array, k: number): Array<{ id: string; cosine: number }> {
  const scored = [...vectors].map(([id, v]) => ({ id, cosine: dot(v, 0, query, d) }));
  scored.sort((a, b) => b.cosine - a.cosine);
  return scored.slice(0, k);
}

const kernels: Array<{ name: string; options: PartitionOptions }> = [
  { name: "js loop", options: { kernel: "js" } },
  { name: "usearch float32", options: { kernel: "usearch", quantizeFromRows: Number.MAX_SAFE_INTEGER } },
  { name: "usearch int8 + rescoring", options: { kernel: "usearch", quantizeFromRows: 1 } },
];

// 100 rows a page: the first page doubles 64 → 100, then 3 more pages; every
// int8 page is fully a candidate. 1,500 rows a page: fewer rows than
// candidates per page (1,000), so the int8 scan stops early page by page.
for (const { pageRows, count } of [
  { pageRows: 100, count: 350 },
  { pageRows: 1500, count: 4000 },
]) {
  t.test(`${count} rows in pages of ${pageRows}: exact across page boundaries`, async (t) => {
    await loadUsearch();
    const random = seededRandom(pageRows);
    const centres = Array.from({ length: 6 }, () => unit(random));
    const vectors = new Map<string, Float32Array>();
    const partitions = kernels.map(({ name, options }) => ({
      name,
      paged: new VectorPartition(d, { ...options, pageRows }),
      onePage: new VectorPartition(d, { ...options, pageRows: 1 << 20 }),
    }));
    const upsert = (id: string, v: Float32Array): void => {
      vectors.set(id, v);
      for (const p of partitions) {
        p.paged.upsert({ id, content: "", metadataJson: "{}", model: "m" }, v);
        p.onePage.upsert({ id, content: "", metadataJson: "{}", model: "m" }, v);
      }
    };
    const remove = (id: string): void => {
      vectors.delete(id);
      for (const p of partitions) {
        p.paged.remove(id);
        p.onePage.remove(id);
      }
    };
    for (let i = 0; i < count; i++) upsert(`r${i}`, unit(random, centres[i % 6]));
    // Holes on every page, each filled by the then-last row (often pages away).
    for (let i = 0; i < count; i += 7) remove(`r${i}`);
    // Replacements in place, then appends into the partly emptied last page.
    for (let i = 3; i < count; i += 50) upsert(`r${i}`, unit(random, centres[(i + 1) % 6]));
    for (let i = 0; i < pageRows / 2; i++) upsert(`n${i}`, unit(random, centres[i % 6]));
    t.equal(partitions[0]?.paged.size, vectors.size, "sizes agree with the reference");

    const wrong: string[] = [];
    let searched = 0;
    for (let q = 0; q < 40; q++) {
      const query = unit(random, q % 2 ? centres[q % 6] : undefined);
      for (const k of [1, 10, 100]) {
        const truth = bruteForce(vectors, query, k);
        for (const p of partitions) {
          const paged = p.paged.searchExact(query, k);
          const onePage = p.onePage.searchExact(query, k);
          const where = `${p.name}, query ${q}, k ${k}`;
          searched += 1;
          if (!agree(brief(paged), brief(onePage), 0)) wrong.push(`${where}: pages answer differently from one page`);
          // The JS loop and the int8 rescoring score with the same float32 dot as the reference; usearch's SIMD float32 may round differently.
          const tolerance = p.name === "usearch float32" ? 1e-6 : 0;
          if (!agree(brief(paged), truth, tolerance)) wrong.push(`${where}: not the brute-force top ${k}`);
        }
      }
    }
    t.equal(searched, 120 * partitions.length, "every kernel ran 120 searches");
    t.same(wrong.slice(0, 5), [], `every kernel's searches equal the brute force and a single page (${wrong.length} differ)`);
    const int8 = partitions[2]?.paged as VectorPartition;
    t.equal(int8.stats.quantized, 120, "every int8 search took the int8 path");
    t.comment(`int8 fallbacks to float32: ${int8.stats.fallbacks} of ${int8.stats.quantized}`);
  });
}

t.test("a page the int8 bound cannot certify sends the whole search to the float32 pass", async (t) => {
  await loadUsearch();
  const random = seededRandom(11);
  const centre = unit(random);
  // 3,100 rows within ~1e-3 of one centre: the int8 error (~1e-2 at 32
  // dimensions) hides their order, so 1,000 candidates of a 1,500-row page
  // cannot prove the top k and every page must fall back.
  const paged = new VectorPartition(d, { kernel: "usearch", quantizeFromRows: 1, pageRows: 1500 });
  const onePage = new VectorPartition(d, { kernel: "usearch", quantizeFromRows: 1 });
  const vectors = new Map<string, Float32Array>();
  for (let i = 0; i < 3100; i++) {
    const v = new Float32Array(d);
    let s = 0;
    for (let j = 0; j < d; j++) s += (v[j] = (centre[j] as number) + (random() - 0.5) * 2e-3) ** 2;
    for (let j = 0; j < d; j++) v[j] = (v[j] as number) / Math.sqrt(s);
    vectors.set(`r${i}`, v);
    paged.upsert({ id: `r${i}`, content: "", metadataJson: "{}", model: "m" }, v);
    onePage.upsert({ id: `r${i}`, content: "", metadataJson: "{}", model: "m" }, v);
  }
  for (const k of [1, 10]) {
    const hits = paged.searchExact(centre, k);
    t.ok(agree(brief(hits), brief(onePage.searchExact(centre, k)), 0), `k ${k}: the float32 pass over the pages equals one page's`);
    t.ok(agree(brief(hits), bruteForce(vectors, centre, k), 1e-6), `k ${k}: the brute force's top k`);
  }
  t.equal(paged.stats.fallbacks, 2, "both searches fell back");
});

t.test("the graph path reads vectors, int8 copies, labels and checksums through the pages", async (t) => {
  await loadUsearch();
  const graphs = new GraphWorker();
  t.teardown(() => graphs.close());
  const random = seededRandom(3);
  // Candidates and ef above the row count: the graph proposes every live row,
  // so its rescored answer must be the brute force's exactly.
  const graph = { ...defaultGraphSettings, fromRows: 200, candidates: 1000, expansionSearch: 1000 };
  const partition = new VectorPartition(d, { kernel: "usearch", pageRows: 100, graph, graphs });
  const vectors = new Map<string, Float32Array>();
  for (let i = 0; i < 450; i++) {
    const v = unit(random);
    vectors.set(`r${i}`, v);
    partition.upsert({ id: `r${i}`, content: "", metadataJson: "{}", model: "m" }, v);
  }
  for (let i = 0; i < 450; i += 9) {
    vectors.delete(`r${i}`);
    partition.remove(`r${i}`);
  }
  await partition.graphSettled();
  t.ok(partition.hasGraph, "the partition built its graph");
  for (let q = 0; q < 20; q++) {
    const query = unit(random);
    const hits = await partition.search(query, 10);
    const truth = bruteForce(vectors, query, 10);
    t.same(brief(hits), truth, `query ${q}: the brute-force top 10, same scores`);
  }
  t.equal(partition.stats.approximate, 20, "every search went through the graph");
  const snapshot = partition.graphSnapshot();
  t.equal(snapshot?.rows.ids.length, vectors.size, "the snapshot holds every row");
  const wrong = (snapshot?.rows.ids ?? []).filter((id, i) => snapshot?.rows.checksums[i] !== vectorChecksum(vectors.get(id) as Float32Array));
  t.same(wrong, [], "each row's checksum is its own vector's");
  t.equal(new Set(snapshot?.rows.labels).size, vectors.size, "labels are distinct");
});

t.test("the page size must be a positive integer", async (t) => {
  t.throws(() => new VectorPartition(d, { kernel: "js", pageRows: 0 }), RangeError);
  t.throws(() => new VectorPartition(d, { kernel: "js", pageRows: 1.5 }), RangeError);
});

/**
 * Same scores rank by rank (within `tolerance`), and each id of `a` in `b`
 * with its score, unless it ties the k-th score. Rows with exactly equal
 * scores may come in another order: usearch's float32 distances tie for rows
 * closer than float32 resolution, and the merge of pages puts the lower row
 * first where one usearch call over all rows had its own heap order.
 */
function agree(a: Array<{ id: string; cosine: number }>, b: Array<{ id: string; cosine: number }>, tolerance: number): boolean {
  if (a.length !== b.length || a.some((hit, i) => Math.abs(hit.cosine - (b[i] as { cosine: number }).cosine) > tolerance)) return false;
  const boundary = b[b.length - 1]?.cosine ?? 0;
  const scoreInB = new Map(b.map((hit) => [hit.id, hit.cosine]));
  return a.every((hit) => {
    const score = scoreInB.get(hit.id);
    return Math.abs((score ?? boundary) - hit.cosine) <= tolerance;
  });
}

function brief(hits: PartitionHit[]): Array<{ id: string; cosine: number }> {
  return hits.map((h) => ({ id: h.entry.id, cosine: h.cosine }));
}
