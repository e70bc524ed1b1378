// Login throttling over real sockets: past the free failures an account
// from one address (or a client address) must wait, 429 rate_limited with
// Retry-After, the wait doubling up to a cap; the right password after the
// wait works and resets the pair; another account from the same address is
// unaffected, and so is the account from another address
// (login-throttle-stranger.test.ts); two
// replicas on one Redis share the counts exactly. Before, 200 wrong
// passwords for one account in 11 s were all 401 with no throttle.
import t from "tap";
import { startReplicas } from "../support/replicas.ts";
import { field, signup, startTestTroupe, type TestTroupe } from "../support/troupe.ts";

const password = "correct horse battery";
const throttled = {
  LOGIN_FREE_FAILURES_PER_ACCOUNT: "3",
  LOGIN_FREE_FAILURES_PER_ADDRESS: "8",
  LOGIN_BACKOFF_BASE_MS: "1000",
  LOGIN_BACKOFF_CAP_MS: "4000",
  CLIENT_ADDRESS_HEADER: "x-forwarded-for",
};

let addresses = 0;
/** A fresh client address per test, through the proxy header, so tests never share address counts. */
function newAddress(): string {
  addresses += 1;
  return `198.51.100.${addresses}, 203.0.113.${addresses % 250}-${process.pid}-${Date.now() % 100000}`;
}

function login(on: TestTroupe, email: string, pass: string, address: string) {
  return on.request("POST", "/v1/auth/login", { body: { email, password: pass }, headers: { "x-forwarded-for": address } });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test("embedded: wrong passwords earn a growing wait; the right one after the wait works and resets", async (t) => {
  const troupe = await startTestTroupe(throttled);
  t.teardown(() => troupe.stop());
  const user = await signup(troupe, "throttle");
  const address = newAddress();
  for (let i = 0; i < 3; i++) t.equal((await login(troupe, user.email, "wrong password", address)).status, 401, `free failure ${i + 1}`);
  const limited = await login(troupe, user.email, "wrong password", address);
  t.equal(limited.status, 429);
  t.equal(field(limited.body, "error", "code"), "rate_limited");
  t.equal(limited.headers.get("retry-after"), "1", "Retry-After: the 1 s wait");
  t.match(field(limited.body, "error", "message"), /for this account/);
  t.equal((await login(troupe, user.email, password, address)).status, 429, "even the right password waits: the wait is not an oracle");
  await sleep(1050);
  t.equal((await login(troupe, user.email, "wrong again", address)).status, 401, "after 1 s one more attempt is admitted");
  const doubled = await login(troupe, user.email, password, address);
  t.equal(doubled.status, 429);
  t.equal(doubled.headers.get("retry-after"), "2", "the wait doubled to 2 s");
  await sleep(2050);
  t.equal((await login(troupe, user.email, password, address)).status, 200, "the right password after the wait logs in");
  for (let i = 0; i < 3; i++) t.equal((await login(troupe, user.email, "wrong password", address)).status, 401, `success reset the account: free failure ${i + 1}`);
});

t.test("embedded: another account from the same address is not locked; the address has its own, higher allowance", async (t) => {
  const troupe = await startTestTroupe(throttled);
  t.teardown(() => troupe.stop());
  const victim = await signup(troupe, "victim");
  const bystander = await signup(troupe, "bystander");
  const address = newAddress();
  for (let i = 0; i < 3; i++) await login(troupe, victim.email, "guess", address);
  t.equal((await login(troupe, victim.email, "guess", address)).status, 429, "the guessed account waits");
  t.equal((await login(troupe, bystander.email, password, address)).status, 200, "another account from the same address logs in");
  t.equal((await login(troupe, bystander.email, "typo", address)).status, 401, "and its own failures start from zero");
  // The address has had 4 failures admitted (the 429 and the success were not counted); 4 more are free.
  for (let i = 0; i < 4; i++) t.equal((await login(troupe, `nobody-${i}-${Date.now()}@example.test`, "guess", address)).status, 401);
  const byAddress = await login(troupe, `nobody-x-${Date.now()}@example.test`, "guess", address);
  t.equal(byAddress.status, 429, "past 8 failures the address waits, whichever account it tries");
  t.match(field(byAddress.body, "error", "message"), /from this address/);
  t.equal((await login(troupe, `nobody-y-${Date.now()}@example.test`, "guess", newAddress())).status, 401, "other addresses are unaffected");
});

t.test("embedded, default settings and the socket's address: 5 free failures, then 429", async (t) => {
  const troupe = await startTestTroupe();
  t.teardown(() => troupe.stop());
  const user = await signup(troupe, "defaults");
  const statuses: number[] = [];
  for (let i = 0; i < 7; i++) statuses.push((await troupe.request("POST", "/v1/auth/login", { body: { email: user.email, password: "nope" } })).status);
  t.same(statuses, [401, 401, 401, 401, 401, 429, 429]);
});

t.test("two replicas on one Redis share the counts, exactly, even for parallel guesses", async (t) => {
  const cluster = await startReplicas(2, throttled);
  t.teardown(() => cluster.stop());
  const [a, b] = cluster.replicas as [TestTroupe, TestTroupe];
  const user = await signup(a, "shared");
  const address = newAddress();
  t.equal((await login(a, user.email, "w1", address)).status, 401);
  t.equal((await login(b, user.email, "w2", address)).status, 401);
  t.equal((await login(a, user.email, "w3", address)).status, 401);
  const limited = await login(b, user.email, password, address);
  t.equal(limited.status, 429, "the 4th attempt, on the other replica, waits");
  t.equal(limited.headers.get("retry-after"), "1");

  const other = await signup(b, "burst");
  const burstAddress = newAddress();
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => login(i % 2 ? a : b, other.email, `guess-${i}`, burstAddress)));
  const counts = { 401: 0, 429: 0 } as Record<number, number>;
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
  t.same(counts, { 401: 3, 429: 17 }, "20 parallel guesses over two replicas: exactly the 3 free ones are tried");
});
