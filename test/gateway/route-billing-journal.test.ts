// A billed route answers only after its call's usage record is in the
// journal (tenancy/usage-journal.ts), now that the journal groups the writes
// of one event-loop turn: ctx.bill's promise (RouteBill.bill, which the
// handler awaits before it returns its answer) settles once the line is on
// file, for a plain call and for one that settles a reservation.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { createLogger } from "../../core/log.ts";
import type { CallBilling } from "../../gateway/billed-call.ts";
import { RouteBill } from "../../gateway/route-billing.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import { UsageMeter, type UsageContext } from "../../providers/usage.ts";
import { readJournal, UsageJournal } from "../../tenancy/usage-journal.ts";
import { UsageRecorder } from "../../tenancy/usage-recorder.ts";

const log = createLogger("silent");
const context = (requestId: string): UsageContext => ({
  organization_id: "org_1",
  project_id: "prj_1",
  environment_id: "env_1",
  api_key_id: "key_1",
  live: true,
  request_id: requestId,
});
const figures = { model: "gpt-4.1-mini", provider: "openai", input_tokens: 12, output_tokens: 8 };
/** A reservation's budgets that settle at once (what tenancy/budget-leases.ts does in memory). */
const billing: CallBilling = { admit: () => undefined, settle: async () => undefined };

function journaled() {
  const dir = mkdtempSync(join(tmpdir(), "route-journal-"));
  const recorder = new UsageRecorder(async () => undefined, log, { schedule: () => () => undefined, journal: new UsageJournal(dir, log) });
  t.teardown(() => recorder.close());
  return { dir, meter: new UsageMeter(Catalogue.load(), recorder) };
}

const onFile = (dir: string) => readJournal(dir).records.map((r) => r.usage_key);

t.test("a plain billed call: ctx.bill's promise settles once its record is on file", async (t) => {
  const { dir, meter } = journaled();
  const billed = new RouteBill(meter, "chat", context("req_plain")).bill(figures);
  t.ok(billed instanceof Promise, "the handler has something to await before it answers");
  await billed;
  t.same(onFile(dir), ["req_plain"]);
});

t.test("a call settling a reservation: ctx.bill's promise settles once its record is on file", async (t) => {
  const { dir, meter } = journaled();
  const billed = new RouteBill(meter, "chat", context("req_reserved"), billing, { project_id: "prj_1", period: "2026-11", id: "rsv_1" }).bill(figures);
  t.ok(billed instanceof Promise);
  await billed;
  t.same(onFile(dir), ["req_reserved"]);
});
