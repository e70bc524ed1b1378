// Observability on a real two-replica Dapr cluster (the real gateway,
// TROUPE_MODE=dapr, each replica with its own daprd):
//   - Chromium (Debian's, driven by playwright-core) signs in to /console on
//     replica 1 and sees both replicas' active actors per type, equal to what
//     each daprd's /v1.0/metadata reports, and the providers' breaker
//     states; the page refreshes itself when the counts change; /docs
//     renders the OpenAPI document. Screenshots go to test-artifacts/.
//   - An agent turn that calls a tool, sent to replica 0 for a conversation
//     placed on replica 1, is one trace: the gateway's span and the actor
//     call on replica 0, the actor turn and the provider calls on replica 1
//     (the W3C traceparent crosses through both daprd), exported over OTLP
//     to a receiver in this test.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { chromium, type Page } from "playwright-core";
import { repoDir } from "../support/dapr-cluster.ts";
import { startDaprCluster } from "../support/dapr-openai-cluster.ts";
import { startOtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.ts";
import { request, signup, str } from "../support/troupe.ts";

t.setTimeout(240_000);
const artifacts = join(repoDir, "test-artifacts");
mkdirSync(artifacts, { recursive: true });
const receiver = await startOtlpReceiver();
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
const { cluster, urls } = await startDaprCluster({
  label: "obs-cluster",
  replicas: 2,
  appEnv: { LOG_LEVEL: "warn", CONSOLE_SNAPSHOT_INTERVAL_MS: "500", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
  ownVectorIndex: true,
  closeAfter: [() => browser.close(), () => receiver.close()],
});
const owner = await signup({ request: (method, path, options) => request(urls[0]!, method, path, options) }, "obs-owner");

/** ConversationActor count each daprd reports for its replica. */
async function daprdCounts(): Promise<number[]> {
  return Promise.all(
    cluster.replicas.map(async (r) => {
      const meta = (await (await fetch(`${r.daprHttpUrl}/v1.0/metadata`)).json()) as { actorRuntime?: { activeActors?: { type: string; count?: number }[] } };
      return meta.actorRuntime?.activeActors?.find((a) => a.type === "ConversationActor")?.count ?? 0;
    }),
  );
}

const conversations: string[] = [];
async function createConversation(): Promise<string> {
  const res = await request(urls[0]!, "POST", "/v1/agents/conversations", { token: owner.testKey, body: {} });
  if (res.status !== 201) throw new Error(`conversation: ${res.status} ${res.text}`);
  conversations.push(str(res.body, "id"));
  return str(res.body, "id");
}

/** The console's actor table as [replica, type, count] rows. */
async function shownActors(page: Page): Promise<[string, string, number][]> {
  const rows = await page.$$eval("#actors tr", (trs) => trs.slice(1).map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")));
  return rows.map((r) => [r[0] ?? "", r[1] ?? "", Number(r[2])]);
}

async function waitForShown(page: Page, expected: number[]): Promise<[string, string, number][]> {
  const deadline = Date.now() + 15_000;
  let shown: [string, string, number][] = [];
  while (Date.now() < deadline) {
    shown = await shownActors(page);
    const counts = [0, 1].map((i) => shown.find(([replica, type]) => replica.startsWith(`replica ${i} `) && type === "ConversationActor")?.[2]);
    if (counts[0] === expected[0] && counts[1] === expected[1]) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  return shown;
}

t.test("Chromium: /console on replica 1 shows both replicas' actors and the providers' states", async (t) => {
  // Placement spreads conversations over the replicas: create until each hosts some.
  for (let i = 0; i < 40; i++) {
    await createConversation();
    const counts = await daprdCounts();
    if (i >= 3 && counts.every((c) => c > 0)) break;
  }
  const before = await daprdCounts();
  t.ok(before.every((c) => c > 0), `both replicas host conversations (daprd: ${before.join(", ")})`);

  // Some usage today, recorded on replica 0 and read back through the shared store.
  const chat = await request(urls[0]!, "POST", "/v1/chat/completions", { token: owner.testKey, body: { messages: [{ role: "user", content: "usage" }] } });
  t.equal(chat.status, 200);

  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${urls[1]}/console`);
  await page.locator("#login").waitFor({ state: "visible" });
  await page.fill("#email", owner.email);
  await page.fill("#password", "correct horse battery");
  await page.click("#login button[type=submit]");
  await page.locator("body[data-loaded=true]").waitFor({ state: "attached", timeout: 15_000 });

  const shown = await waitForShown(page, before);
  for (const i of [0, 1]) {
    const row = shown.find(([replica, type]) => replica === `replica ${i} (dapr)` && type === "ConversationActor");
    t.equal(row?.[2], before[i], `replica ${i}: the console shows daprd's count (${before[i]})`);
  }
  const providerRow = await page.$$eval("#providers tr", (trs) =>
    trs.map((tr) => [...tr.querySelectorAll("th, td")].map((c) => c.textContent ?? "")).find((cells) => cells[0] === "simulated"),
  );
  t.same(providerRow, ["simulated", "closed", "closed"], "the simulated provider's breaker, closed on both replicas");
  t.match(await page.locator("#meta").innerText(), /served by replica 1/);
  await page.screenshot({ path: join(artifacts, "console.png"), fullPage: true });

  // It refreshes itself: two more conversations show up without a reload.
  await createConversation();
  await createConversation();
  const after = await daprdCounts();
  const refreshed = await waitForShown(page, after);
  const total = refreshed.filter(([, type]) => type === "ConversationActor").reduce((sum, [, , n]) => sum + n, 0);
  t.equal(total, after[0]! + after[1]!, `the page caught up by itself (${total} active)`);
  await page.close();
});

t.test("Chromium: /docs renders the OpenAPI document from the npm files", async (t) => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const external: string[] = [];
  page.on("request", (req) => {
    if (!req.url().startsWith(urls[0]!)) external.push(req.url());
  });
  await page.goto(`${urls[0]}/docs`);
  await page.locator(".opblock-summary-path", { hasText: "/v1/chat/completions" }).first().waitFor({ timeout: 20_000 });
  t.ok(await page.locator(".opblock").count() > 20, "every operation is listed");
  t.match(await page.locator(".title").first().innerText(), /Troupe/);
  t.same(external, [], "nothing requested from another origin");
  await page.screenshot({ path: join(artifacts, "docs.png") });
  await page.close();
});

t.test("one trace across two replicas: gateway on replica 0, actor and provider on replica 1", async (t) => {
  // Each conversation gets a message through replica 0 under its own trace id;
  // placement decides where each actor runs, so some turns run on replica 1.
  const traceOf = new Map<string, string>();
  for (const [i, id] of conversations.entries()) {
    const traceId = `${(i + 1).toString(16).padStart(8, "0")}${"ab".repeat(12)}`;
    traceOf.set(id, traceId);
    const sent = await request(urls[0]!, "POST", `/v1/agents/conversations/${id}/messages`, {
      token: owner.testKey,
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      body: { content: "remember: traces cross replicas; then answer" },
    });
    t.equal(sent.status, 200, `message ${i} answered`);
  }
  const turnOn = (spans: ReceivedSpan[], replica: string) =>
    spans.filter((s) => s.name === "actor ConversationActor.postMessage" && s.instance === replica && [...traceOf.values()].includes(s.traceId));
  // Each replica exports in its own batches: the gateway span (ended with the
  // response, on replica 0) may arrive after the turn's (replica 1), so wait for both.
  const complete = (spans: ReceivedSpan[], turn: ReceivedSpan) =>
    spans.filter((s) => s.traceId === turn.traceId && s.name.startsWith("provider ")).length >= 3 &&
    spans.some((s) => s.traceId === turn.traceId && s.name === "POST /v1/agents/conversations/:id/messages");
  const all = await receiver.waitFor((spans) => turnOn(spans, "1").some((turn) => complete(spans, turn)));
  const turn = turnOn(all, "1").find((x) => complete(all, x))!;
  const trace = all.filter((s) => s.traceId === turn.traceId);
  const gateway = trace.find((s) => s.name === "POST /v1/agents/conversations/:id/messages");
  const call = trace.find((s) => s.name === "actor call ConversationActor.postMessage");
  const providers = trace.filter((s) => s.name.startsWith("provider "));
  t.equal(gateway?.instance, "0", "the gateway span on replica 0");
  t.equal(gateway?.parentSpanId, "00f067aa0ba902b7", "continuing the caller's traceparent");
  t.equal(call?.instance, "0", "the actor call leaves from replica 0");
  t.equal(call?.parentSpanId, gateway?.spanId, "as the gateway span's child");
  t.equal(turn.instance, "1", "the actor turn runs on replica 1");
  t.equal(turn.parentSpanId, call?.spanId, "child of the call on replica 0: daprd passed the traceparent through");
  t.ok(providers.length >= 3, `provider calls in the same trace (${providers.map((s) => s.name).join(", ")})`);
  t.ok(providers.every((s) => s.instance === "1" && s.parentSpanId === turn.spanId), "made by the turn on replica 1");
  t.ok(providers.some((s) => s.attributes["gen_ai.request.model"] === "simulated-embed"), "including the remember tool's embedding");
});
