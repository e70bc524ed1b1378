// Every answered call is billed through a kill -9 (tenancy/usage-journal.ts):
// an embedded Troupe answers 200 concurrent live chat calls, then 8 more one
// by one, and is killed the moment the last answer arrives, while the usage
// recorder still holds their records for its next flush; after a restart on
// the same data directory every answered call has exactly one usage record.
// The same for a hard-limited project far from its limit, whose calls are
// admitted from the replica's budget lease and settled into it in memory
// (tenancy/budget-leases.ts): their records, too, are in the journal first.
import t from "tap";
import { startOpenAIFake } from "../fakes/openai-fake.ts";
import { projectWithLiveKey } from "../support/billing.ts";
import { gatewayProcess, killAndWait } from "../support/gateway-process.ts";
import { request, signup } from "../support/troupe.ts";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import { projectUsage } from "../jobs/usage-reader.ts";

t.setTimeout(120_000);
// The hard-limited run needs a priced model (a free one reserves nothing, so takes no lease): the OpenAI fake.
const openai = await startOpenAIFake({ apiKey: "sk-fake" });
t.teardown(() => openai.close());
const { base, dataDir, start } = await gatewayProcess("troupe-kill-billing-", { OPENAI_API_KEY: "sk-fake", OPENAI_BASE_URL: `${openai.url}/v1` });
let child = await start();
t.teardown(() => void child.kill("SIGKILL"));
const r = { request: (m: string, p: string, o?: Parameters<typeof request>[3]) => request(base, m, p, o) };

for (const hard of [false, true]) {
  t.test(`every live call answered before a kill -9 is billed once after the restart${hard ? " (hard-limited project, leased)" : ""}`, async (t) => {
    if (child.exitCode !== null || child.signalCode !== null) child = await start();
    const user = await signup(r, hard ? "kill-billing-hard" : "kill-billing");
    const p = await projectWithLiveKey(r, user.token, user.orgId);
    if (hard) t.equal((await r.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: 1000, hard_limit: true } })).status, 200);
    const body = { model: hard ? "gpt-4.1-mini" : "simulated-chat", max_tokens: 16, routing_strategy: "manual", messages: [{ role: "user", content: "bill me" }] };
    const call = () =>
      fetch(`${base}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${p.liveKey}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    const answered: string[] = [];
    // 200 concurrent calls, then a few more one after another: fewer than the
    // recorder's early-flush count, so their records wait for its 200 ms timer,
    // and the kill lands right after the last answer, inside that wait.
    for (const res of await Promise.all(Array.from({ length: 200 }, call))) if (res.status === 200) answered.push(res.headers.get("x-request-id") ?? "");
    for (let i = 0; i < 8; i++) {
      const res = await call();
      if (res.status === 200) answered.push(res.headers.get("x-request-id") ?? "");
    }
    await killAndWait(child, "SIGKILL");
    t.equal(answered.length, 208, "208 answers seen before the kill");

    // The restart replays the journal; a clean stop then leaves the ledger to read.
    child = await start();
    await killAndWait(child, "SIGTERM");
    const ledger = new EmbeddedLedgerStore(dataDir);
    const records = await projectUsage(ledger, p.projectId);
    await ledger.close();
    const keys = new Map<string, number>();
    for (const record of records) keys.set(record.usage_key, (keys.get(record.usage_key) ?? 0) + 1);
    const missing = answered.filter((id) => !keys.has(id));
    t.same(missing, [], `every answered call has its record (${records.length} records for ${answered.length} answers seen)`);
    t.same([...keys].filter(([, n]) => n > 1), [], "none billed twice");
  });
}
