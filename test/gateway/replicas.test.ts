// Two gateway replicas sharing Redis: a key revoked through one is refused
// by the other within 5 s, and the per-key rate limit is exact across both.
import t from "tap";
import { probeRoutes } from "../support/probe-routes.ts";
import { startReplicas } from "../support/replicas.ts";
import { field, signup, str, type TestTroupe } from "../support/troupe.ts";

const cluster = await startReplicas(2, {}, () => ({ extraRoutes: () => probeRoutes() }));
t.teardown(() => cluster.stop());
const [r0, r1] = cluster.replicas as [TestTroupe, TestTroupe];

t.test("revocation on replica 0 reaches replica 1 within 5 s", async (t) => {
  const user = await signup(r0);
  const created = await r0.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body: { name: "shared" } });
  const key = str(created.body, "key");
  t.equal((await r1.request("POST", "/v1/test-probe/chat", { token: key, body: { n: 1 } })).status, 200, "replica 1 caches the key");
  const login = await r1.request("POST", "/v1/auth/login", { body: { email: user.email, password: "correct horse battery" } });
  t.equal(login.status, 200, "sessions work on any replica");
  const revokedAt = Date.now();
  t.equal((await r0.request("DELETE", `/v1/api-keys/${str(created.body, "id")}`, { token: user.token })).status, 200);
  t.equal((await r0.request("POST", "/v1/test-probe/chat", { token: key, body: { n: 1 } })).status, 401, "refused at once where revoked");
  let refusedAfterMs = -1;
  while (Date.now() - revokedAt < 6000) {
    const res = await r1.request("POST", "/v1/test-probe/chat", { token: key, body: { n: 1 } });
    if (res.status === 401) {
      refusedAfterMs = Date.now() - revokedAt;
      break;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  t.ok(refusedAfterMs >= 0 && refusedAfterMs <= 5000, `replica 1 refused it after ${refusedAfterMs} ms`);
});

t.test("rate limit per key: exact across replicas, 429 with Retry-After", async (t) => {
  const user = await signup(r0);
  const created = await r0.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body: { name: "limited", rate_limit_per_minute: 10 } });
  const key = str(created.body, "key");
  const results = await Promise.all(
    Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? r0 : r1).request("POST", "/v1/test-probe/chat", { token: key, body: { n: 1 } })),
  );
  const ok = results.filter((r) => r.status === 200).length;
  const limited = results.filter((r) => r.status === 429);
  t.equal(ok, 10, "exactly the limit got through across both replicas");
  t.equal(limited.length, 20);
  const first = limited[0];
  t.equal(field(first?.body, "error", "code"), "rate_limited");
  const retryAfter = Number(first?.headers.get("retry-after"));
  t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After: ${retryAfter}`);
});
