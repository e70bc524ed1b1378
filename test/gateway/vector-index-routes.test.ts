// POST /v1/embeddings/index and /search over HTTP, on the embedded index and
// on Elasticsearch: round trip, ordering, organization isolation, input
// validation, the metadata caps and the per-organization quota (4 records
// here), the bound on a search response, and an Elasticsearch outage
// answered with a quick 503.
import { createServer, connect, type Server, type Socket } from "node:net";
import t from "tap";
import { field, signup, startTestTroupe, type TestTroupe } from "../support/troupe.ts";

// Every Elasticsearch add waits for a refresh (~1 s), and the response-bound test indexes 100 large records.
t.setTimeout(180_000);

const elasticsearchUrl = process.env["ELASTICSEARCH_URL"];
if (!elasticsearchUrl) throw new Error("ELASTICSEARCH_URL is not set: run npm run elasticsearch (CI starts one)");

/** A TCP proxy in front of Elasticsearch that the test can cut. */
async function startProxy(target: URL): Promise<{ url: string; cut(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop);
    upstream.on("error", drop);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    cut: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function suite(name: string, start: () => Promise<TestTroupe>): void {
  t.test(name, async (t) => {
    const troupe = await start();
    t.teardown(() => troupe.stop());
    const a = await signup(troupe, "vec-a");
    const b = await signup(troupe, "vec-b");
    const index = (key: string, content: string, metadata?: unknown) => troupe.request("POST", "/v1/embeddings/index", { token: key, body: { content, ...(metadata === undefined ? {} : { metadata }) } });
    const search = (key: string, query: string, top_k?: number) => troupe.request("POST", "/v1/embeddings/search", { token: key, body: { query, ...(top_k === undefined ? {} : { top_k }) } });

    const first = await index(a.testKey, "Lisbon trams climb steep hills", { city: "lisbon", tags: ["travel"] });
    t.equal(first.status, 200, first.text);
    t.match(field(first.body, "id"), /^[0-9a-f-]{36}$/);
    await index(a.testKey, "Invoices are due within thirty days");
    await index(a.testKey, "Porto is known for its wine cellars");
    await index(b.testKey, "Lisbon trams climb steep hills every single day", { owner: "b" });

    const found = await search(a.testKey, "Lisbon trams hills", 3);
    t.equal(found.status, 200, found.text);
    const results = field(found.body, "results") as { content: string; metadata: unknown; model: string; distance: number }[];
    t.equal(results.length, 3);
    t.equal(results[0]?.content, "Lisbon trams climb steep hills", "the closest first");
    t.same(results[0]?.metadata, { city: "lisbon", tags: ["travel"] }, "metadata round trip");
    t.equal(results[0]?.model, "simulated-embed");
    t.ok(results.every((r, i) => i === 0 || (results[i - 1]?.distance ?? 0) <= r.distance), "ascending distance");
    t.notOk(found.text.includes('"owner":"b"'), "never another organization's records, even closer ones");
    t.equal((field((await search(a.testKey, "trams")).body, "results") as unknown[]).length, 3, "top_k defaults to 5 (3 records exist)");

    const bad: [string, string, unknown][] = [
      ["/v1/embeddings/index", "empty content", { content: "" }],
      ["/v1/embeddings/index", "non-object metadata", { content: "x", metadata: [1, 2] }],
      ["/v1/embeddings/index", "string metadata", { content: "x", metadata: "m" }],
      ["/v1/embeddings/index", "oversized content", { content: "x".repeat(40_000) }],
      ["/v1/embeddings/search", "top_k 0", { query: "x", top_k: 0 }],
      ["/v1/embeddings/search", "top_k 1000", { query: "x", top_k: 1000 }],
      ["/v1/embeddings/search", "empty query", { query: "" }],
    ];
    for (const [path, what, body] of bad) {
      const res = await troupe.request("POST", path, { token: a.testKey, body });
      t.equal(res.status, 400, what);
    }
    t.equal((await search(a.testKey, "x", 100)).status, 200, "top_k 100 is allowed");

    // Metadata: 16 KiB of JSON at most ({"pad":"…"} is 10 bytes around the padding), 16 levels deep.
    const overCap = await index(a.testKey, "one byte too much metadata", { pad: "x".repeat(16 * 1024 - 9) });
    t.equal(overCap.status, 400, overCap.text);
    t.equal(field(overCap.body, "error", "code"), "invalid_request");
    t.match(field(overCap.body, "error", "details"), [{ path: /^body\.metadata$/, message: /at most 16384 bytes as JSON \(UTF-8\), got 16385/ }], "names metadata");
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let level = 1; level < 17; level++) deep = { child: deep };
    const tooDeep = await index(a.testKey, "too deep", deep);
    t.equal(tooDeep.status, 400, tooDeep.text);
    t.match(field(tooDeep.body, "error", "details"), [{ path: /^body\.metadata$/, message: /at most 16 levels deep/ }]);
    const atCap = await index(a.testKey, "exactly 16 KiB of metadata", { pad: "x".repeat(16 * 1024 - 10) });
    t.equal(atCap.status, 200, "the 4th record, at the metadata cap, fills the quota of 4");

    const full = await index(a.testKey, "a fifth record");
    t.equal(full.status, 403, full.text);
    t.equal(field(full.body, "error", "code"), "quota_exceeded");
    t.match(field(full.body, "error", "message"), /holds 4 records and its quota is 4/);
    const held = field((await search(a.testKey, "record", 100)).body, "results") as { content: string }[];
    t.equal(held.length, 4, "nothing of the refused records was stored");
    t.notOk(held.some((r) => r.content === "a fifth record" || r.content === "too deep" || r.content === "one byte too much metadata"));
    t.equal((await index(b.testKey, "b still has room")).status, 200, "the quota is per organization");
  });
}

const quota = { VECTOR_INDEX_QUOTA_PER_ORG: "4" };
suite("embedded index", () => startTestTroupe(quota));
const routesIndex = `troupe-routes-${process.pid}-${Date.now()}`;
t.teardown(() => fetch(`${elasticsearchUrl}/${routesIndex}`, { method: "DELETE" }).then(() => undefined, () => undefined));
suite("elasticsearch index", () => startTestTroupe({ ...quota, ELASTICSEARCH_URL: elasticsearchUrl, ELASTICSEARCH_INDEX: routesIndex }));

t.test("the largest search response the caps allow stays under 8 MiB", async (t) => {
  const troupe = await startTestTroupe();
  t.teardown(() => troupe.stop());
  const user = await signup(troupe, "vec-big");
  // Each record at both caps: content 65,535 bytes of JSON (21,845 × "日", 3 bytes each),
  // metadata 16,384 bytes of JSON whose escapes (\u0001, 6 bytes) make it as long as it gets.
  const metadata = { pad: "\u0001".repeat(Math.floor((16 * 1024 - 20) / 6)), fill: "" };
  metadata.fill = "x".repeat(16 * 1024 - Buffer.byteLength(JSON.stringify(metadata)));
  t.equal(Buffer.byteLength(JSON.stringify(metadata)), 16 * 1024);
  for (let i = 0; i < 100; i++) {
    const content = `${i} ${"日".repeat(21_843)}`.slice(0, 21_845);
    const res = await troupe.request("POST", "/v1/embeddings/index", { token: user.testKey, body: { content, metadata } });
    t.equal(res.status, 200, `record ${i}`);
    if (res.status !== 200) return;
  }
  const startedMs = performance.now();
  const res = await troupe.request("POST", "/v1/embeddings/search", { token: user.testKey, body: { query: "日", top_k: 100 } });
  const ms = performance.now() - startedMs;
  t.equal(res.status, 200);
  t.equal((field(res.body, "results") as unknown[]).length, 100);
  const bytes = Buffer.byteLength(res.text);
  t.ok(bytes > 7 * 1024 * 1024, `${bytes} bytes: the records were at the caps`);
  t.ok(bytes < 8 * 1024 * 1024, `${bytes} bytes < 8 MiB (answered in ${Math.round(ms)} ms)`);
});

t.test("an Elasticsearch outage is a quick 503, never a hang", async (t) => {
  const proxy = await startProxy(new URL(elasticsearchUrl));
  const indexName = `troupe-outage-${process.pid}-${Date.now()}`;
  const troupe = await startTestTroupe({ ELASTICSEARCH_URL: proxy.url, ELASTICSEARCH_INDEX: indexName });
  t.teardown(async () => {
    await troupe.stop();
    await fetch(`${elasticsearchUrl}/${indexName}`, { method: "DELETE" }).catch(() => undefined);
  });
  const user = await signup(troupe, "outage");
  t.equal((await troupe.request("POST", "/v1/embeddings/index", { token: user.testKey, body: { content: "before the outage" } })).status, 200);
  await proxy.cut();
  const started = Date.now();
  const res = await troupe.request("POST", "/v1/embeddings/search", { token: user.testKey, body: { query: "outage" } });
  t.equal(res.status, 503);
  t.equal(field(res.body, "error", "code"), "service_unavailable");
  t.match(field(res.body, "error", "message"), /Elasticsearch/);
  t.ok(Date.now() - started < 15_000, `answered in ${Date.now() - started} ms`);
});
