// /console/data.json over HTTP on an embedded Troupe: who may read it
// (owners and admins; a member is 403, no session 401, another
// organization 404), what it shows (this replica's breakers and active
// actors, today's usage from the stored records, jobs in flight, budgets, the
// failed deliveries of the organization's webhooks), and /docs serving
// Swagger UI from npm files.
import t from "tap";
import { field, request, signup, startTestTroupe, str } from "../support/troupe.ts";
import type { ConsoleData } from "../../gateway/console/console-data.ts";
import { startWebhookReceiver } from "../fakes/webhook-receiver.ts";

// The webhook receiver listens on 127.0.0.1, which outbound calls refuse unless allowed.
const troupe = await startTestTroupe({ CONSOLE_SNAPSHOT_INTERVAL_MS: "500", OUTBOUND_ALLOW_HOSTS: "127.0.0.1" });
t.teardown(() => troupe.stop());
const base = `http://127.0.0.1:${troupe.port}`;

const owner = await signup(troupe, "console-owner");

async function data(token: string, query = ""): Promise<{ status: number; body: unknown }> {
  const res = await request(base, "GET", `/console/data.json${query}`, { token });
  return { status: res.status, body: res.body };
}

t.test("an owner sees breakers, active actors, usage today and the wired sections", async (t) => {
  const conversation = await troupe.request("POST", "/v1/agents/conversations", { token: owner.testKey, body: {} });
  t.equal(conversation.status, 201);
  const budget = await troupe.request("PUT", `/v1/projects/${owner.projectId}/budget`, { token: owner.token, body: { monthly_limit_usd: 10, hard_limit: true } });
  t.equal(budget.status, 200, budget.text);
  const chat = await troupe.request("POST", "/v1/chat/completions", { token: owner.testKey, body: { messages: [{ role: "user", content: "count me" }] } });
  t.equal(chat.status, 200);
  // Usage records reach the store off the request path (the recorder flushes every 200 ms).
  let got: ConsoleData | undefined;
  for (let i = 0; i < 50; i++) {
    const res = await data(owner.token);
    t.equal(res.status, 200);
    got = res.body as ConsoleData;
    if (got.usage_today.available && got.usage_today.rows.length > 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const d = got!;
  t.equal(d.organization.id, owner.orgId);
  t.equal(d.served_by, "0");
  const replica = d.replicas.find((r) => r.replica === "0");
  t.ok(replica, "this replica's row");
  t.same(replica?.breakers.find((b) => b.provider === "simulated"), { provider: "simulated", state: "closed" });
  t.ok((replica?.actors.find((a) => a.type === "ConversationActor")?.count ?? 0) >= 1, "the conversation's actor is counted");
  t.same(d.usage_today, { available: true, rows: [{ category: "chat", live: false, requests: 1, cost_usd: 0 }] }, "today's chat call, from a test key");
  t.same(d.jobs_in_flight, { available: true, rows: [] }, "jobs are wired: none in flight");
  t.same(d.budgets, { available: true, rows: [{ project_id: owner.projectId, project_name: field(d.budgets, "rows", 0, "project_name"), monthly_limit_usd: 10, spent_usd: 0, hard_limit: true }] }, "the project's budget, from the ledger (test keys spend nothing)");
});

t.test("a webhook whose receiver answers 500: its failed delivery is listed, not its successful one nor other organizations' failures", async (t) => {
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  receiver.fallback = { status: 500 };
  const created = await troupe.request("POST", "/v1/webhooks", { token: owner.testKey, body: { url: receiver.url, events: ["job.completed"] } });
  t.equal(created.status, 201, created.text);
  const webhookId = str(created.body, "webhook", "id");
  receiver.secret = str(created.body, "secret");
  const sent = await troupe.request("POST", `/v1/webhooks/${webhookId}/test`, { token: owner.testKey });
  t.equal(sent.status, 200, sent.text);
  t.equal(field(sent.body, "status"), "failed", "the receiver's 500 fails the attempt");
  // A later attempt that succeeds is not a failure: only the 500 is listed.
  receiver.fallback = { status: 200 };
  const ok = await troupe.request("POST", `/v1/webhooks/${webhookId}/test`, { token: owner.testKey });
  t.equal(field(ok.body, "status"), "succeeded", ok.text);
  t.equal(receiver.received.length, 2);
  receiver.fallback = { status: 500 };

  // Someone else's failing webhook must not show in this organization's console.
  const stranger = await signup(troupe, "console-stranger");
  const theirs = await troupe.request("POST", "/v1/webhooks", { token: stranger.testKey, body: { url: receiver.url, events: ["job.failed"] } });
  t.equal(theirs.status, 201, theirs.text);
  t.equal((await troupe.request("POST", `/v1/webhooks/${str(theirs.body, "webhook", "id")}/test`, { token: stranger.testKey })).status, 200);

  const res = await data(owner.token);
  t.equal(res.status, 200);
  const failures = (res.body as ConsoleData).webhook_failures;
  t.same(failures, {
    available: true,
    rows: [
      {
        webhook_id: webhookId,
        url: receiver.url,
        event_type: "webhook.test",
        attempt: 1,
        response_status: 500,
        error: field(failures, "rows", 0, "error"),
        created_at: field(failures, "rows", 0, "created_at"),
      },
    ],
  });
});

t.test("the console cookie works like the bearer session; API keys and strangers are refused", async (t) => {
  const cookie = await request(base, "GET", "/console/data.json", { headers: { cookie: `troupe_session=${owner.token}` } });
  t.equal(cookie.status, 200, "the session cookie the login sets");
  t.equal((await request(base, "GET", "/console/data.json")).status, 401, "no session");
  t.equal((await request(base, "GET", "/console/data.json", { token: owner.testKey })).status, 403, "an API key is the wrong credential");
  const stranger = await signup(troupe, "console-stranger");
  const other = await data(stranger.token, `?org=${owner.orgId}`);
  t.equal(other.status, 404, "another organization is not found");
  t.equal(field(other.body, "error", "code"), "not_found");
  const bad = await data(owner.token, "?org=%3Cscript%3E");
  t.equal(bad.status, 400);
  t.equal(field(bad.body, "error", "details", 0, "path"), "query.org");
});

t.test("a member (not owner or admin) of the organization gets 404 for it", async (t) => {
  const member = await signup(troupe, "console-member");
  const invited = await troupe.request("POST", `/v1/orgs/${owner.orgId}/invitations`, { token: owner.token, body: { email: member.email, role: "member" } });
  t.equal(invited.status, 201, invited.text);
  const accepted = await troupe.request("POST", "/v1/invitations/accept", { token: member.token, body: { token: str(invited.body, "token") } });
  t.ok(accepted.status < 300, `accepted: ${accepted.status}`);
  const asMember = await data(member.token, `?org=${owner.orgId}`);
  t.equal(asMember.status, 404, "members do not see the organization's console");
  const own = (await data(member.token)).body as ConsoleData;
  t.same(own.organizations.map((o) => o.id), [member.orgId], "only the organization they own is offered");
});

t.test("the page and its script are plain, self-contained files", async (t) => {
  const page = await fetch(`${base}/console`);
  t.equal(page.status, 200);
  t.match(page.headers.get("content-type"), /^text\/html/);
  t.match(page.headers.get("content-security-policy"), /script-src 'self'/);
  const html = await page.text();
  t.notMatch(html, /https?:\/\//, "no external URL in the page");
  t.equal((await fetch(`${base}/console/console.js`)).status, 200);
  t.equal((await fetch(`${base}/console`, { method: "POST" })).status, 405, "GET and HEAD only");
});

t.test("/docs serves Swagger UI from swagger-ui-dist, pointing at /v1/openapi.json", async (t) => {
  const page = await fetch(`${base}/docs`);
  t.equal(page.status, 200);
  const html = await page.text();
  t.match(html, /<meta charset="utf-8">/);
  t.notMatch(html, /https?:\/\//, "no CDN");
  const init = await (await fetch(`${base}/docs/init.js`)).text();
  t.match(init, /url: "\/v1\/openapi\.json"/);
  const bundle = await fetch(`${base}/docs/swagger-ui-bundle.js`);
  t.equal(bundle.status, 200);
  t.ok(Number(bundle.headers.get("content-length")) > 500_000, "the real bundle");
  const head = await fetch(`${base}/docs/swagger-ui.css`, { method: "HEAD" });
  t.equal(head.status, 200);
  const openapi = (await (await fetch(`${base}/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
  t.notOk(Object.keys(openapi.paths).some((p) => p.startsWith("/console") || p.startsWith("/docs") || p === "/metrics"), "not part of the /v1 OpenAPI");
});
