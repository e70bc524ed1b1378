// Billing declared on a route (gateway/route-billing.ts): the server admits
// the route's payer BEFORE its handler runs, settles the reservation with the
// figures the handler reports (ctx.bill), releases it when the handler fails
// or reports nothing, and refuses an under-limit route 402 at the limit
// without running the handler, for HTTP routes and WebSocket upgrades alike
// (a socket whose budget check needs the ledger is closed with 4402).
// The budgets here are a recording fake (CallBilling), so the order of
// reserve, handler and settle is observable; the sync fast path is pinned
// on admitRoute itself.
import t from "tap";
import { z } from "zod";
import { createLogger } from "../../core/log.ts";
import { TroupeError } from "../../core/errors.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import { UsageMeter, type Payer, type UsageRecord } from "../../providers/usage.ts";
import type { Admission, AdmissionPolicy, AuthFor } from "../../gateway/admission.ts";
import type { CallBilling } from "../../gateway/billed-call.ts";
import { admitRoute, type ReservedCall, type BillableContext } from "../../gateway/route-billing.ts";
import { defineRoute, defineWsRoute, json, type AuthMode } from "../../gateway/route.ts";
import { createGateway } from "../../gateway/server.ts";
import { attachWsRoute } from "../../gateway/ws-route.ts";
import { KeyRevocations } from "../../tenancy/key-revocations.ts";
import type { Reservation } from "../../tenancy/ledger.ts";
import type { ApiKeyRecord } from "../../tenancy/types.ts";
import { parseResponse, raw } from "./raw-http.ts";

/** Budgets that record what the server asked of them, in order, into `log` (shared with the handlers). */
class RecordingBilling implements CallBilling {
  atLimit = false;
  private next = 0;
  private readonly log: string[];
  constructor(log: string[]) {
    this.log = log;
  }
  admit(payer: Payer, estimateNanos: () => number): undefined | Promise<Reservation | undefined> {
    if (!payer.live) return undefined; // as tenancy/billing.ts: test keys are never stopped, synchronously
    return (async () => {
      if (this.atLimit) {
        this.log.push("refused");
        throw new TroupeError("budget_exceeded", "the project's monthly budget is used up");
      }
      const reservation = { project_id: payer.project_id, period: "2026-11", id: `rsv_${++this.next}` };
      this.log.push(`reserve ${reservation.id} ${estimateNanos()}`);
      return reservation;
    })();
  }
  async settle(reservation: Reservation, record: UsageRecord | undefined): Promise<void> {
    this.log.push(record ? `settle ${reservation.id} ${record.model} ${record.input_tokens}+${record.output_tokens}` : `release ${reservation.id}`);
  }
}

const keyOf = (live: boolean) =>
  ({ id: live ? "key_live" : "key_test", organization_id: "org_1", project_id: "prj_1", environment_id: "env_1", live }) as unknown as ApiKeyRecord;

/** Every request is an API key: live unless it says `x-test-key: 1`. */
const admission: Admission = {
  admit: <A extends AuthMode>(_policy: AdmissionPolicy<A>, _method: string, headers: Record<string, string>): AuthFor<A> =>
    ({ kind: "api_key", key: keyOf(headers["x-test-key"] !== "1") }) as AuthFor<A>,
};

const log: string[] = [];
const records: UsageRecord[] = [];
const billing = new RecordingBilling(log);
const services = { billing, usage: new UsageMeter(Catalogue.load(), { record: (r) => void records.push(r) }) };
const figures = { model: "gpt-4.1-mini", provider: "openai", input_tokens: 1000, output_tokens: 500 };
const body = z.object({ fail: z.boolean().default(false), bill: z.boolean().default(true) }).strict();

const routes = [
  defineRoute({
    method: "post",
    path: "/v1/billed",
    summary: "a reserved call",
    tag: "test",
    auth: "api_key",
    body,
    responses: { 200: z.object({ ok: z.boolean() }) },
    billing: { admit: "reserve", via: services, category: "chat", estimate: () => 4242 },
    handler: async (ctx) => {
      log.push("handler");
      if (ctx.body.fail) throw new TroupeError("provider_error", "the provider failed");
      if (ctx.body.bill) await ctx.bill(figures);
      return json(200, { ok: true });
    },
  }),
  defineRoute({
    method: "post",
    path: "/v1/under-limit",
    summary: "work billed by its parts",
    tag: "test",
    auth: "api_key",
    responses: { 202: z.object({ ok: z.boolean() }) },
    billing: { admit: "under-limit", via: services },
    handler: async () => {
      log.push("handler");
      return json(202, { ok: true });
    },
  }),
];

const socketRoute = defineWsRoute({
  kind: "ws",
  path: "/v1/billed-socket",
  summary: "a socket opened under the limit only",
  tag: "test",
  auth: "api_key",
  billing: { admit: "under-limit", via: services },
  accept: async () => {
    log.push("accept");
    return {};
  },
});
const gateway = createGateway({
  routes,
  sockets: { routes: [{ route: socketRoute, attach: (app, deps) => attachWsRoute(app, socketRoute, {}, deps) }], revocations: new KeyRevocations() },
  admission,
  log: createLogger("error"),
  maxBodyBytes: 1024,
  secureCookies: false,
  ready: async () => true,
  openApiInfo: { title: "t", version: "1" },
});
const port = await gateway.listen("127.0.0.1", 0);
gateway.open();
t.teardown(() => gateway.shutdown(100));

const post = async (path: string, payload: unknown = {}, headers: Record<string, string> = {}) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(payload) });
  return { status: res.status, body: (await res.json()) as unknown };
};
const fresh = () => {
  log.length = 0;
  records.length = 0;
  billing.atLimit = false;
};

t.test("a reserved route: reserved before its handler, settled with the handler's figures", async (t) => {
  fresh();
  const res = await post("/v1/billed");
  t.equal(res.status, 200);
  t.same(log, ["reserve rsv_1 4242", "handler", "settle rsv_1 gpt-4.1-mini 1000+500"], "reserve → handler → settle at the real figures");
  t.equal(records.length, 1, "the settled record also goes to the meter's sink");
  t.match(records[0], { category: "chat", model: "gpt-4.1-mini", live: true, api_key_id: "key_live" });
});

t.test("a reserved route whose handler fails releases its reservation and bills nothing", async (t) => {
  fresh();
  const res = await post("/v1/billed", { fail: true });
  t.equal(res.status, 502);
  t.match(res.body, { error: { code: "provider_error" } });
  t.same(log, ["reserve rsv_2 4242", "handler", "release rsv_2"]);
  t.equal(records.length, 0);
});

t.test("a reserved route whose handler reports nothing releases its reservation before answering", async (t) => {
  fresh();
  const res = await post("/v1/billed", { bill: false });
  t.equal(res.status, 200);
  t.same(log, ["reserve rsv_3 4242", "handler", "release rsv_3"]);
});

t.test("at the hard limit a reserved route is 402 and its handler never runs", async (t) => {
  fresh();
  billing.atLimit = true;
  const res = await post("/v1/billed");
  t.equal(res.status, 402);
  t.match(res.body, { error: { code: "budget_exceeded" } });
  t.same(log, ["refused"]);
});

t.test("an under-limit route: admitted (nothing held for it) before its handler, refused 402 at the limit without running it", async (t) => {
  fresh();
  t.equal((await post("/v1/under-limit")).status, 202);
  t.same(log, ["reserve rsv_4 0", "release rsv_4", "handler"], "admission counted, released before the handler");
  fresh();
  billing.atLimit = true;
  const refused = await post("/v1/under-limit");
  t.equal(refused.status, 402);
  t.match(refused.body, { error: { code: "budget_exceeded" } });
  t.same(log, ["refused"], "the handler never ran");
});

t.test("a test key is never reserved for, and its call is recorded", async (t) => {
  fresh();
  billing.atLimit = true;
  t.equal((await post("/v1/billed", {}, { "x-test-key": "1" })).status, 200);
  t.same(log, ["handler"]);
  t.equal(records.length, 1);
  t.match(records[0], { live: false, cost_nanos: 0 });
});

t.test("a WebSocket route declared under-limit: closed 4402 at the limit before accept, admitted otherwise", async (t) => {
  const upgrade = () =>
    raw(port, `GET /v1/billed-socket HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n`, 500);
  fresh();
  billing.atLimit = true;
  // The budget's ledger step is I/O: the upgrade completes at once (never after an await) and the refusal closes the socket.
  const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/billed-socket`);
  const closed = await new Promise<{ code: number; reason: string }>((resolve) => ws.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason })));
  t.equal(closed.code, 4402, "4000 + 402");
  t.match(JSON.parse(closed.reason), { code: "budget_exceeded" });
  t.same(log, ["refused"], "accept never ran");
  fresh();
  const opened = parseResponse((await upgrade()).text);
  t.equal(opened.status, 101);
  t.match(log, [/^reserve rsv_\d+ 0$/, /^release rsv_\d+$/, "accept"]);
});

t.test("the common path is synchronous: no Promise without a reservation", async (t) => {
  const declared: ReservedCall<BillableContext> = {
    admit: "reserve",
    via: services,
    category: "chat",
    estimate: () => {
      throw new Error("estimated on the common path");
    },
  };
  const testKey = admitRoute(declared, { auth: { kind: "api_key", key: keyOf(false) }, requestId: "req_1" });
  t.notOk(testKey instanceof Promise, "a test key");
  const session = admitRoute(declared, { auth: { kind: "none" }, requestId: "req_2" });
  t.notOk(session instanceof Promise, "no API key (a session): not billed");
  const noBudgets = admitRoute({ ...declared, via: { usage: services.usage } }, { auth: { kind: "api_key", key: keyOf(true) }, requestId: "req_3" });
  t.notOk(noBudgets instanceof Promise, "no budgets configured");
  t.equal(testKey instanceof Promise ? undefined : testKey.release(), undefined, "nothing to release");
});
