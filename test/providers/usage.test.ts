// The usage meter, the one place a call's usage becomes a record: priced
// from the catalogue, stamped by the injected clock, identified by the
// request id; calls without a payer are not recorded; a failing sink never
// reaches the caller.
import t from "tap";
import { Catalogue } from "../../providers/catalogue.ts";
import { UsageMeter, type UsageContext, type UsageRecord } from "../../providers/usage.ts";
import { usageRecord } from "../support/usage-record.ts";

const catalogue = Catalogue.load();
const context: UsageContext = {
  organization_id: "org_1",
  project_id: "prj_1",
  environment_id: "env_1",
  api_key_id: "key_1",
  live: true,
  request_id: "req_42",
};

t.test("a call's context and figures become one priced record", async (t) => {
  const records: UsageRecord[] = [];
  const meter = new UsageMeter(catalogue, { record: (u) => void records.push(u) }, () => Date.UTC(2026, 0, 2, 3, 4, 5));
  // A chat result as the router returns it: extra fields are not copied into the record.
  const result = { content: "hi", finish_reason: "stop", model: "gpt-4.1-mini", provider: "openai", input_tokens: 1_000_000, output_tokens: 500_000, tool_calls: null };
  meter.record(context, "chat", result);
  // The fixture's defaults are this context's ids and a gpt-4.1-mini chat call; the figures are the result's, priced.
  t.same(records, [
    usageRecord({
      input_tokens: 1_000_000,
      output_tokens: 500_000,
      cost_usd: 1.2,
      cost_nanos: 1_200_000_000,
      request_id: "req_42",
      usage_key: "req_42",
      created_at: "2026-01-02T03:04:05.000Z",
    }),
  ]);
  t.ok(records[0]!.cost_usd > 0, "priced from the catalogue");

  meter.record(context, "embeddings", { model: "text-embedding-3-small", provider: "openai", input_tokens: 7 });
  t.match(records[1], { category: "embeddings", input_tokens: 7, output_tokens: 0, units: 0, request_id: "req_42" });

  // An agent turn numbers its model calls: one request id, distinct ledger keys.
  meter.record({ ...context, call: 0 }, "agents", result);
  meter.record({ ...context, call: 1 }, "agents", result);
  t.same(records.slice(2).map((r) => r.usage_key), ["req_42#0", "req_42#1"]);
});

t.test("a test key's call is recorded with cost 0", async (t) => {
  const records: UsageRecord[] = [];
  const meter = new UsageMeter(catalogue, { record: (u) => void records.push(u) });
  meter.record({ ...context, live: false }, "chat", { model: "gpt-4.1-mini", provider: "openai", input_tokens: 1000, output_tokens: 10 });
  t.match(records, [{ live: false, cost_usd: 0, cost_nanos: 0, input_tokens: 1000 }]);
});

t.test("no context (a session call): nothing recorded", async (t) => {
  const records: UsageRecord[] = [];
  new UsageMeter(catalogue, { record: (u) => void records.push(u) }).record(undefined, "chat", { model: "gpt-4.1-mini", provider: "openai", input_tokens: 1 });
  t.same(records, []);
});

t.test("a sink that throws does not fail the answered call", async (t) => {
  const meter = new UsageMeter(catalogue, {
    record: () => {
      throw new Error("ledger down");
    },
  });
  t.doesNotThrow(() => meter.record(context, "chat", { model: "gpt-4.1-mini", provider: "openai", input_tokens: 1 }));
});
