// The one test suite every VectorIndex backend runs (embedded, Elasticsearch):
// ordering and exact cosine distances, top_k bounds, metadata round trip,
// organization isolation, concurrent adds, restart persistence, refusal of a
// model change, the metadata.kind filter, boundary validation, the content and
// metadata caps and the per-organization quota.
import type { Test } from "tap";
import { randomUUID } from "node:crypto";
import { TroupeError } from "../../core/errors.ts";
import { defaultVectorLimits, type VectorIndex, type VectorLimits, type VectorRecord, type VectorSearchResult } from "../../vectors/vector-index.ts";
import { exactCosineDistance } from "../support/cosine.ts";
import { seededRandom } from "../support/seeded-random.ts";

export interface IndexShape {
  model: string;
  dimensions: number;
  /** Passed to the backend's constructor when a test needs other limits. */
  limits?: VectorLimits;
}

export interface VectorIndexHarness {
  /** A fresh, empty storage location (a directory, an index name). */
  newLocation(label: string): Promise<string>;
  /** An index (not yet opened) over a location; the same location sees the same data. */
  make(location: string, shape: IndexShape): VectorIndex;
  /** Removes every location this harness made. */
  cleanup(): Promise<void>;
}

const dims = 16;
const model = "test-embed";
const shape: IndexShape = { model, dimensions: dims };


function randomVector(random: () => number, d = dims): number[] {
  return Array.from({ length: d }, () => random() * 2 - 1);
}


function record(organizationId: string, vector: number[], extra: Partial<VectorRecord> = {}): VectorRecord {
  return {
    id: randomUUID(),
    organization_id: organizationId,
    content: `content ${randomUUID()}`,
    metadata: {},
    model,
    vector,
    created_at: new Date().toISOString(),
    ...extra,
  };
}

async function rejectsWithCode(t: Test, promise: Promise<unknown>, code: string, message: string): Promise<void> {
  try {
    await promise;
    t.fail(`${message}: expected ${code}, but it resolved`);
  } catch (error) {
    t.ok(error instanceof TroupeError, `${message}: a TroupeError`);
    t.equal((error as TroupeError).code, code, message);
  }
}

export function vectorIndexSuite(t: Test, harness: VectorIndexHarness): void {
  const opened: VectorIndex[] = [];
  const openIndex = async (location: string, s: IndexShape = shape): Promise<VectorIndex> => {
    const index = harness.make(location, s);
    await index.open();
    opened.push(index);
    return index;
  };
  t.teardown(async () => {
    for (const index of opened) await index.close().catch(() => undefined);
    await harness.cleanup();
  });

  t.test("results are ordered by exact cosine distance", async (t) => {
    const index = await openIndex(await harness.newLocation("order"));
    const random = seededRandom(1);
    const records = Array.from({ length: 60 }, () => record("org-a", randomVector(random)));
    await index.add(records);
    for (let q = 0; q < 5; q++) {
      const query = randomVector(random);
      const results = await index.search("org-a", query, 10);
      t.equal(results.length, 10);
      const exact = records
        .map((r) => ({ id: r.id, distance: exactCosineDistance(query, r.vector) }))
        .sort((a, b) => a.distance - b.distance)
        .slice(0, 10);
      t.same(
        results.map((r) => r.id),
        exact.map((e) => e.id),
        "the same ten records as exact search, in the same order",
      );
      for (let i = 0; i < results.length; i++) {
        const result = results[i] as VectorSearchResult;
        const expected = exact[i]?.distance ?? NaN;
        t.ok(Math.abs(result.distance - expected) <= 1e-3, `distance ${result.distance} within 1e-3 of exact ${expected}`);
        if (i > 0) t.ok(result.distance >= (results[i - 1] as VectorSearchResult).distance, "ascending");
      }
    }
    const self = records[7] as VectorRecord;
    const [nearest] = await index.search("org-a", self.vector, 1);
    t.equal(nearest?.id, self.id, "a stored vector finds itself first");
    t.ok(Math.abs(nearest?.distance ?? 1) <= 1e-3, "at distance ~0");
    const opposite = await index.search("org-a", (self.vector as number[]).map((v) => -v), 60);
    t.equal(opposite.at(-1)?.id, self.id, "its opposite ranks it last");
    t.ok(Math.abs((opposite.at(-1)?.distance ?? 0) - 2) <= 1e-3, "at distance ~2");
  });

  t.test("top_k bounds", async (t) => {
    const index = await openIndex(await harness.newLocation("topk"));
    const random = seededRandom(2);
    await index.add(Array.from({ length: 120 }, () => record("org-a", randomVector(random))));
    const query = randomVector(random);
    t.equal((await index.search("org-a", query, 1)).length, 1, "top_k 1");
    const hundred = await index.search("org-a", query, 100);
    t.equal(hundred.length, 100, "top_k 100");
    t.equal(new Set(hundred.map((r) => r.id)).size, 100, "no duplicates");
    for (const bad of [0, 101, -1, 1.5, Number.NaN]) {
      await rejectsWithCode(t, index.search("org-a", query, bad), "invalid_request", `top_k ${bad}`);
    }
    const small = await openIndex(await harness.newLocation("topk-small"));
    await small.add([record("org-a", randomVector(random)), record("org-a", randomVector(random))]);
    t.equal((await small.search("org-a", query, 5)).length, 2, "fewer records than top_k: all of them");
    t.same(await small.search("org-nobody", query, 5), [], "an organization with no records: empty");
  });

  t.test("content, metadata and model round trip", async (t) => {
    const index = await openIndex(await harness.newLocation("metadata"));
    const metadata = {
      kind: "document",
      source: { url: "https://example.com/a?b=c", page: 3 },
      tags: ["ünïcødé", "日本語", ""],
      score: 0.25,
      flag: false,
      nothing: null,
    };
    const r = record("org-a", randomVector(seededRandom(3)), { content: "Line one\nline two — «quoted» 🚀", metadata });
    await index.add([r]);
    const [hit] = await index.search("org-a", r.vector, 1);
    t.same(hit, { id: r.id, content: r.content, metadata, model, distance: hit?.distance });
    t.same(Object.keys(hit ?? {}).sort(), ["content", "distance", "id", "metadata", "model"], "exactly the spec's fields");
  });

  t.test("an organization never sees another's records, even closer ones", async (t) => {
    const index = await openIndex(await harness.newLocation("isolation"));
    const random = seededRandom(4);
    const query = randomVector(random);
    // B holds the query itself and tiny perturbations of it: the globally nearest vectors.
    const bRecords = Array.from({ length: 30 }, () => record("org-b", query.map((v) => v + (random() - 0.5) * 1e-3)));
    const aRecords = Array.from({ length: 15 }, () => record("org-a", randomVector(random)));
    await Promise.all([index.add(bRecords), index.add(aRecords)]);
    const aIds = new Set(aRecords.map((r) => r.id));
    const forA = await index.search("org-a", query, 10);
    t.equal(forA.length, 10, "A still gets its own top 10");
    t.ok(forA.every((r) => aIds.has(r.id)), "only A's records");
    const exactA = aRecords
      .map((r) => ({ id: r.id, d: exactCosineDistance(query, r.vector) }))
      .sort((x, y) => x.d - y.d)
      .slice(0, 10)
      .map((e) => e.id);
    t.same(forA.map((r) => r.id), exactA, "A's exact top 10");
    const forB = await index.search("org-b", query, 50);
    t.equal(forB.length, 30);
    t.ok(forB.every((r) => !aIds.has(r.id)), "B sees none of A's");
    // The same id in two organizations stays two records.
    const shared = randomUUID();
    await index.add([record("org-a", query, { id: shared, content: "a's" }), record("org-b", query, { id: shared, content: "b's" })]);
    t.equal((await index.search("org-a", query, 1))[0]?.content, "a's");
    t.equal((await index.search("org-b", query, 100)).filter((r) => r.id === shared).map((r) => r.content).join(), "b's");
  });

  t.test("deleting an organization removes all its records, durably, and only its", async (t) => {
    const location = await harness.newLocation("delete-org");
    const random = seededRandom(41);
    const index = await openIndex(location);
    const doomed = Array.from({ length: 30 }, (_, i) => record("org-doomed", randomVector(random), { metadata: { kind: i % 2 ? "memory" : "document" } }));
    const kept = Array.from({ length: 10 }, () => record("org-kept", randomVector(random)));
    await index.add([...doomed, ...kept]);
    const query = randomVector(random);
    t.equal(await index.deleteOrganization("org-doomed"), 30, "answers how many went");
    t.same(await index.search("org-doomed", query, 100), [], "nothing left to search");
    t.equal((await index.search("org-kept", query, 100)).length, 10, "another organization keeps its records");
    t.equal(await index.deleteOrganization("org-doomed"), 0, "a second deletion finds nothing");
    await index.close();
    const reopened = await openIndex(location);
    t.same(await reopened.search("org-doomed", query, 100), [], "still gone after reopening");
    await reopened.add([record("org-doomed", query)]);
    t.equal((await reopened.search("org-doomed", query, 100)).length, 1, "the organization id can be used again");
  });

  t.test("concurrent adds all land; re-adding an id replaces it", async (t) => {
    const index = await openIndex(await harness.newLocation("concurrent"));
    const random = seededRandom(5);
    const batches = Array.from({ length: 20 }, () => Array.from({ length: 5 }, () => record("org-a", randomVector(random))));
    await Promise.all(batches.map((batch) => index.add(batch)));
    const all = await index.search("org-a", randomVector(random), 100);
    t.same(all.map((r) => r.id).sort(), batches.flat().map((r) => r.id).sort(), "all 100 records searchable once add resolved");
    const first = batches[0]?.[0] as VectorRecord;
    const moved = randomVector(random);
    await index.add([{ ...first, content: "replaced", vector: moved }]);
    const [hit] = await index.search("org-a", moved, 1);
    t.equal(hit?.id, first.id);
    t.equal(hit?.content, "replaced");
    t.equal((await index.search("org-a", moved, 100)).length, 100, "still 100 records");
  });

  t.test("records survive close and reopen", async (t) => {
    const location = await harness.newLocation("restart");
    const random = seededRandom(6);
    const records = Array.from({ length: 25 }, (_, i) => record(i % 2 ? "org-a" : "org-b", randomVector(random), { metadata: { i, kind: i % 3 ? "document" : "memory" } }));
    const first = await openIndex(location);
    await first.add(records);
    const query = randomVector(random);
    const before = await first.search("org-a", query, 20);
    const memoriesBefore = await first.search("org-b", query, 20, { metadataKind: "memory" });
    await first.close();
    const second = await openIndex(location);
    t.same(await second.search("org-a", query, 20), before, "same answers after reopening");
    t.same(await second.search("org-b", query, 20, { metadataKind: "memory" }), memoriesBefore, "same filtered answers");
    t.equal(before.length, 12);
  });

  t.test("opening with another model or dimension is refused", async (t) => {
    const location = await harness.newLocation("model");
    const index = await openIndex(location);
    await index.add([record("org-a", randomVector(seededRandom(7)))]);
    await index.close();
    await t.rejects(
      harness.make(location, { model: "other-embed", dimensions: dims }).open(),
      /refusing to mix vectors: index .+ was built with model test-embed \(16 dims\); configured EMBEDDING_INDEX_MODEL is other-embed \(16 dims\)/,
    );
    await t.rejects(harness.make(location, { model, dimensions: 32 }).open(), /refusing to mix vectors: .*test-embed \(16 dims\).*test-embed \(32 dims\)/);
    const again = await openIndex(location);
    t.equal((await again.search("org-a", randomVector(seededRandom(8)), 5)).length, 1, "the original model still opens it");
  });

  t.test("metadataKind filter returns only that kind, with its own top_k", async (t) => {
    const index = await openIndex(await harness.newLocation("kind"));
    const random = seededRandom(9);
    const query = randomVector(random);
    const near = (kind: string | undefined) =>
      record("org-a", query.map((v) => v + (random() - 0.5) * 0.01), { metadata: kind === undefined ? {} : { kind } });
    const documents = Array.from({ length: 20 }, () => near("document"));
    const untyped = Array.from({ length: 10 }, () => near(undefined));
    const memories = Array.from({ length: 12 }, () => record("org-a", randomVector(random), { metadata: { kind: "memory", note: "m" } }));
    const otherOrgMemories = Array.from({ length: 5 }, () => record("org-b", query, { metadata: { kind: "memory" } }));
    await index.add([...documents, ...untyped, ...memories, ...otherOrgMemories]);
    const found = await index.search("org-a", query, 5, { metadataKind: "memory" });
    t.equal(found.length, 5, "five memories although 30 closer non-memories exist");
    const memoryIds = new Set(memories.map((r) => r.id));
    t.ok(found.every((r) => memoryIds.has(r.id) && r.metadata["kind"] === "memory"));
    const exact = memories
      .map((r) => ({ id: r.id, d: exactCosineDistance(query, r.vector) }))
      .sort((a, b) => a.d - b.d)
      .slice(0, 5)
      .map((e) => e.id);
    t.same(found.map((r) => r.id), exact, "the five nearest memories");
    const unfiltered = await index.search("org-a", query, 30);
    t.ok(unfiltered.every((r) => !memoryIds.has(r.id)), "without the filter the closer records come first");
    t.same(await index.search("org-a", query, 5, { metadataKind: "nope" }), [], "an unknown kind: nothing");
    for (const kind of ["-", "\u0000", "undefined", "null"]) {
      t.same(await index.search("org-a", query, 5, { metadataKind: kind }), [], `records without a kind never match kind ${JSON.stringify(kind)}`);
    }
    // A record whose kind changes moves between filters.
    const memory = memories[0] as VectorRecord;
    await index.add([{ ...memory, metadata: { kind: "document" } }]);
    const afterChange = await index.search("org-a", memory.vector, 12, { metadataKind: "memory" });
    t.equal(afterChange.length, 11);
    t.notOk(afterChange.some((r) => r.id === memory.id), "no longer a memory");
  });

  t.test("bad input is refused at the boundary with invalid_request", async (t) => {
    const index = await openIndex(await harness.newLocation("validation"));
    const random = seededRandom(10);
    const good = record("org-a", randomVector(random));
    await rejectsWithCode(t, index.add([{ ...good, vector: randomVector(random, dims - 1) }]), "invalid_request", "wrong dimension");
    await rejectsWithCode(t, index.add([{ ...good, vector: new Array<number>(dims).fill(0) }]), "invalid_request", "zero vector");
    await rejectsWithCode(t, index.add([{ ...good, vector: [Number.NaN, ...randomVector(random, dims - 1)] }]), "invalid_request", "NaN");
    await rejectsWithCode(t, index.add([{ ...good, model: "other-embed" }]), "invalid_request", "another model's vector");
    await rejectsWithCode(t, index.add([{ ...good, id: "not-a-uuid" }]), "invalid_request", "id not a UUID");
    await rejectsWithCode(t, index.add([good, { ...good, id: randomUUID(), organization_id: "" }]), "invalid_request", "empty organization");
    await rejectsWithCode(t, index.search("org-a", randomVector(random, dims + 1), 5), "invalid_request", "query of wrong dimension");
    await rejectsWithCode(t, index.search("", randomVector(random), 5), "invalid_request", "empty organization in search");
    try {
      await index.add([{ ...good, vector: randomVector(random, 3) }]);
    } catch (error) {
      t.match((error as TroupeError).details, [{ path: "records[0].vector", message: /expected 16 dimensions, got 3/ }], "names the field");
    }
    t.same(await index.search("org-a", good.vector, 5), [], "nothing of a refused batch was written");
    await index.add([good, { ...good, id: randomUUID(), vector: new Float32Array(randomVector(random)) }]);
    t.equal((await index.search("org-a", good.vector, 5)).length, 2, "number[] and Float32Array both accepted");
  });

  t.test("content and metadata caps: at the cap accepted, one byte over refused naming the field", async (t) => {
    const index = await openIndex(await harness.newLocation("caps"));
    const random = seededRandom(11);
    const limits = defaultVectorLimits;
    // {"pad":"…"} is 10 bytes of JSON around the padding.
    const atCap = { pad: "x".repeat(limits.metadataMaxBytes - 10) };
    t.equal(Buffer.byteLength(JSON.stringify(atCap)), limits.metadataMaxBytes);
    const stored = record("org-a", randomVector(random), { metadata: atCap });
    await index.add([stored]);
    const overCap = { pad: "x".repeat(limits.metadataMaxBytes - 9) };
    const refused = [
      ["metadata one byte over", record("org-a", randomVector(random), { metadata: overCap }), "records[0].metadata", /at most 16384 bytes as JSON \(UTF-8\), got 16385/],
      // "é" is 2 bytes of UTF-8: the cap counts bytes, not characters.
      ["metadata over in bytes, under in characters", record("org-a", randomVector(random), { metadata: { pad: "é".repeat(9000) } }), "records[0].metadata", /at most 16384 bytes/],
      ["metadata 17 levels deep", record("org-a", randomVector(random), { metadata: nested(17) }), "records[0].metadata", /at most 16 levels deep/],
      ["content one byte over", record("org-a", randomVector(random), { content: "y".repeat(limits.contentMaxBytes + 1) }), "records[0].content", /at most 65536 bytes/],
      // A control character is 6 bytes of JSON (\u0001): what a response would carry.
      ["content over once JSON-escaped", record("org-a", randomVector(random), { content: "\u0001".repeat(11_000) }), "records[0].content", /at most 65536 bytes/],
    ] as const;
    for (const [what, bad, path, message] of refused) {
      try {
        await index.add([bad]);
        t.fail(`${what}: accepted`);
      } catch (error) {
        t.equal((error as TroupeError).code, "invalid_request", what);
        t.match((error as TroupeError).details, [{ path, message }], `${what}: names ${path}`);
      }
    }
    await index.add([record("org-a", randomVector(random), { metadata: nested(16), content: "y".repeat(limits.contentMaxBytes) })]);
    const all = await index.search("org-a", stored.vector, 10);
    t.equal(all.length, 2, "the two records at the caps, none of the refused ones");
    t.same(all.find((r) => r.id === stored.id)?.metadata, atCap, "16 KiB metadata round trip");
  });

  t.test("the per-organization quota: a batch past it is refused whole, upserts and other organizations unaffected", async (t) => {
    const limits = { ...defaultVectorLimits, quotaPerOrganization: 10 };
    const index = await openIndex(await harness.newLocation("quota"), { ...shape, limits });
    t.same(index.limits, limits);
    const random = seededRandom(12);
    const query = randomVector(random);
    const first = Array.from({ length: 8 }, () => record("org-a", randomVector(random)));
    await index.add(first);
    const tooMany = Array.from({ length: 3 }, () => record("org-a", randomVector(random)));
    try {
      await index.add(tooMany);
      t.fail("8 + 3 > 10 was accepted");
    } catch (error) {
      t.equal((error as TroupeError).code, "quota_exceeded");
      t.equal((error as TroupeError).status, 403);
      t.match((error as TroupeError).message, /holds 8 records and its quota is 10; adding 3 more/);
    }
    t.equal((await index.search("org-a", query, 100)).length, 8, "nothing of the refused batch was written");
    await index.add(tooMany.slice(0, 2));
    t.equal((await index.search("org-a", query, 100)).length, 10, "up to the quota exactly");
    await index.add([{ ...(first[0] as VectorRecord), content: "replaced at the quota" }]);
    t.ok((await index.search("org-a", query, 100)).some((r) => r.content === "replaced at the quota"), "an upsert of a stored id is not a new record");
    await rejectsWithCode(t, index.add([record("org-a", randomVector(random))]), "quota_exceeded", "one more is refused");
    // A mixed batch is refused whole when one organization is full.
    await rejectsWithCode(t, index.add([record("org-b", randomVector(random)), record("org-a", randomVector(random))]), "quota_exceeded", "mixed batch");
    t.same(await index.search("org-b", query, 5), [], "nothing of the mixed batch for org-b either");
    await index.add(Array.from({ length: 10 }, () => record("org-b", randomVector(random))));
    t.equal((await index.search("org-b", query, 100)).length, 10, "another organization has its own quota");

    // Concurrent single adds: exactly the quota lands, never more.
    const racers = Array.from({ length: 16 }, () => index.add([record("org-c", randomVector(random))]));
    const settled = await Promise.allSettled(racers);
    const accepted = settled.filter((s) => s.status === "fulfilled").length;
    const refusedCodes = settled.flatMap((s) => (s.status === "rejected" ? [(s.reason as TroupeError).code] : []));
    t.equal(accepted, 10, "10 of 16 concurrent adds accepted");
    t.same([...new Set(refusedCodes)], ["quota_exceeded"], "the others refused with quota_exceeded");
    t.equal((await index.search("org-c", query, 100)).length, 10, "10 stored");
  });

  t.test("checkQuota refuses as add would, and reserves nothing", async (t) => {
    const limits = { ...defaultVectorLimits, quotaPerOrganization: 3 };
    const index = await openIndex(await harness.newLocation("check-quota"), { ...shape, limits });
    const random = seededRandom(13);
    await index.add([record("org-a", randomVector(random)), record("org-a", randomVector(random))]);
    await index.checkQuota("org-a", 1);
    await index.checkQuota("org-a", 1);
    await index.add([record("org-a", randomVector(random))]);
    t.equal((await index.search("org-a", randomVector(random), 100)).length, 3, "two checks of one record each held nothing: the add after them fits");
    try {
      await index.checkQuota("org-a", 1);
      t.fail("a fourth record was allowed");
    } catch (error) {
      t.equal((error as TroupeError).code, "quota_exceeded");
      t.match((error as TroupeError).message, /holds 3 records and its quota is 3; adding 1 more/);
    }
    await index.checkQuota("org-b", 3);
    await rejectsWithCode(t, index.checkQuota("org-b", 4), "quota_exceeded", "more than the quota at once");
  });
}

/** An object nested `depth` levels deep, the outermost being level 1. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: true };
  for (let level = 1; level < depth; level++) value = { child: value };
  return value;
}
