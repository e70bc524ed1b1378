// The agents scenario at a fixed concurrency (closed loop), run as a child
// process: conversations are created, each turn runs the built-in memory
// tools and parks on the declared `lookup` tool until the driver posts its
// output; every operation's count matches Troupe's /metrics per route.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { reportSchema } from "../../load/report.ts";
import { sampleValue } from "../support/prometheus-text.ts";
import { field } from "../support/troupe.ts";
import { metrics, runCli, troupeWithKey } from "./load-support.ts";

t.setTimeout(60_000);
const { troupe, url, key, billedRequestIds } = await troupeWithKey();
t.teardown(() => troupe.stop());

const routes = {
  "conversations.create": { method: "POST", route: "/v1/agents/conversations", status: "201" },
  "conversations.messages": { method: "POST", route: "/v1/agents/conversations/:id/messages", status: "200" },
  "conversations.tool-outputs": { method: "POST", route: "/v1/agents/conversations/:id/tool-outputs", status: "200" },
};

t.test("agents at a concurrency of 3 for 2 s, 2 turns each", async (t) => {
  const json = join(mkdtempSync(join(tmpdir(), "troupe-load-agents-")), "agents.json");
  const run = await runCli(["--url", url, "--key", key, "--scenario", "agents", "--concurrency", "3", "--duration", "2", "--turns", "2", "--json", json, "--quiet"]);
  t.equal(run.code, 0, run.stderr);
  const report = reportSchema.parse(JSON.parse(readFileSync(json, "utf8")));
  t.equal(report.mode, "closed");
  t.equal(report.errors, 0, JSON.stringify(report.error_examples));
  const counts = Object.fromEntries(Object.keys(routes).map((op) => [op, report.latency_ms.by_operation[op]?.count ?? 0]));
  const created = counts["conversations.create"] ?? 0;
  t.ok(created >= 3, `${created} conversations`);
  t.equal(counts["conversations.messages"], 2 * created, "two turns per conversation");
  t.equal(counts["conversations.tool-outputs"], 2 * created, "each turn parked on lookup once and was answered");

  const samples = await metrics(troupe);
  for (const [op, where] of Object.entries(routes)) t.equal(sampleValue(samples, "troupe_http_request_duration_seconds_count", where), counts[op], `Troupe counted every ${op}`);
  t.equal(sampleValue(samples, "troupe_http_request_duration_seconds_count", { route: "/v1/agents/conversations/:id/messages" }), counts["conversations.messages"], "and no message failed");

  // Turns call the model and are billed under their request id; creating a
  // conversation bills nothing, so its id is checked for this Troupe's prefix.
  const prefix = /^req_[^_]+_/.exec([...billedRequestIds][0] ?? "")?.[0];
  t.ok(prefix, `Troupe's request ids start with ${prefix}`);
  for (const s of report.slowest) {
    if (s.operation === "conversations.create") t.ok(s.request_id?.startsWith(prefix ?? "?"), `${s.request_id} (${s.operation}) is one of this Troupe's request ids`);
    else t.ok(s.request_id && billedRequestIds.has(s.request_id), `${s.request_id} (${s.operation}) is a request Troupe billed`);
  }
  t.equal(new Set(report.slowest.map((s) => s.request_id)).size, report.slowest.length, "each a different request");

  // One conversation, read back: the memory tools ran inside the turns.
  const list = await troupe.request("GET", "/v1/agents/conversations?limit=1", { token: key });
  const id = String(field(list.body, "data", 0, "id"));
  const conversation = await troupe.request("GET", `/v1/agents/conversations/${id}`, { token: key });
  const calls = ((field(conversation.body, "messages") ?? []) as { tool_calls: { name: string }[] | null }[]).flatMap((m) => (m.tool_calls ?? []).map((c) => c.name));
  t.same(calls, ["remember", "search_memory", "lookup", "remember", "search_memory", "lookup"], "remember, search_memory, then the declared lookup, in each turn");
});
