// Signups per client address over real sockets: one address made
// 200 signups in 6.4 s. Past SIGNUP_LIMIT_PER_ADDRESS in a window, 429
// rate_limited with Retry-After; other addresses are unaffected; the window
// ends and signups work again; two replicas on one Redis share the count.
import t from "tap";
import { startReplicas } from "../support/replicas.ts";
import { field, startTestTroupe, type TestTroupe } from "../support/troupe.ts";

const limited = { SIGNUP_LIMIT_PER_ADDRESS: "3", SIGNUP_WINDOW_MS: "2000", CLIENT_ADDRESS_HEADER: "x-forwarded-for" };
let n = 0;
function signupFrom(on: TestTroupe, address: string) {
  n += 1;
  const body = { email: `signup-${n}-${process.pid}-${Date.now()}@example.test`, password: "correct horse battery" };
  return on.request("POST", "/v1/auth/signup", { body, headers: { "x-forwarded-for": address } });
}

t.test("embedded: past the limit an address gets 429 with Retry-After until its window ends", async (t) => {
  const troupe = await startTestTroupe(limited);
  t.teardown(() => troupe.stop());
  const address = "198.51.100.7";
  for (let i = 0; i < 3; i++) t.equal((await signupFrom(troupe, address)).status, 201, `signup ${i + 1}`);
  const refused = await signupFrom(troupe, address);
  t.equal(refused.status, 429);
  t.equal(field(refused.body, "error", "code"), "rate_limited");
  t.match(field(refused.body, "error", "message"), /too many signups from this address \(3 per 2 s\)/);
  const retryAfter = Number(refused.headers.get("retry-after"));
  t.ok(retryAfter >= 1 && retryAfter <= 2, `Retry-After ${retryAfter}`);
  t.equal((await signupFrom(troupe, "198.51.100.8")).status, 201, "another address is unaffected");
  await new Promise((r) => setTimeout(r, retryAfter * 1000 + 50));
  t.equal((await signupFrom(troupe, address)).status, 201, "after the window the address signs up again");
});

t.test("embedded, default settings: 20 per hour from the socket's address", async (t) => {
  // Test Troupes lift the limit unless told (every test signs up from 127.0.0.1): unset, the built-in default holds.
  const troupe = await startTestTroupe({ SIGNUP_LIMIT_PER_ADDRESS: undefined, SIGNUP_WINDOW_MS: undefined });
  t.teardown(() => troupe.stop());
  const statuses: number[] = [];
  for (let i = 0; i < 22; i++) {
    n += 1;
    statuses.push((await troupe.request("POST", "/v1/auth/signup", { body: { email: `default-${n}-${Date.now()}@example.test`, password: "correct horse battery" } })).status);
  }
  t.same(statuses, [...Array(20).fill(201), 429, 429]);
});

t.test("two replicas on one Redis share the count, even for parallel signups", async (t) => {
  const cluster = await startReplicas(2, limited);
  t.teardown(() => cluster.stop());
  const [a, b] = cluster.replicas as [TestTroupe, TestTroupe];
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => signupFrom(i % 2 ? a : b, "203.0.113.9")));
  const counts: Record<number, number> = {};
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
  t.same(counts, { 201: 3, 429: 5 }, "exactly 3 of 8 parallel signups over two replicas");
});
