// The login throttle counts per (account, address) pair: before,
// one count per account let a stranger making one wrong guess every 200 ms
// from elsewhere keep the owner, right password from their own address, at
// 429 for 19 tries of 19. Over real sockets, addresses through the proxy header.
import t from "tap";
import { signup, startTestTroupe, type TestTroupe } from "../support/troupe.ts";

const password = "correct horse battery";
const throttled = {
  LOGIN_FREE_FAILURES_PER_ACCOUNT: "3",
  LOGIN_FREE_FAILURES_PER_ADDRESS: "8",
  // Long enough that the stranger's first wait outlasts the test.
  LOGIN_BACKOFF_BASE_MS: "30000",
  LOGIN_BACKOFF_CAP_MS: "60000",
  CLIENT_ADDRESS_HEADER: "x-forwarded-for",
};
const stranger = "198.51.100.66";
const home = "203.0.113.77";

function login(on: TestTroupe, email: string, pass: string, address: string) {
  return on.request("POST", "/v1/auth/login", { body: { email, password: pass }, headers: { "x-forwarded-for": address } });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test("embedded: a stranger guessing from another address never blocks the owner's address, and the owner's login does not free the stranger", async (t) => {
  const troupe = await startTestTroupe(throttled);
  t.teardown(() => troupe.stop());
  const owner = await signup(troupe, "owner");
  for (let i = 0; i < 3; i++) t.equal((await login(troupe, owner.email, `guess ${i}`, stranger)).status, 401, `the stranger's free failure ${i + 1}`);
  // Then one wrong guess every 200 ms from the stranger, the owner logging in between.
  const strangerStatuses: number[] = [];
  const ownerStatuses: number[] = [];
  for (let i = 0; i < 8; i++) {
    strangerStatuses.push((await login(troupe, owner.email, `guess again ${i}`, stranger)).status);
    ownerStatuses.push((await login(troupe, owner.email, password, home)).status);
    await sleep(200);
  }
  t.same(strangerStatuses, Array(8).fill(429), "the stranger waits");
  t.same(ownerStatuses, Array(8).fill(200), "the owner, right password from their own address, is never refused");
  t.equal((await login(troupe, owner.email, "one more", stranger)).status, 429, "the owner's successes did not clear the stranger's count");
  t.equal((await login(troupe, owner.email, "typo", home)).status, 401, "the owner's own failures are counted apart from the stranger's");
});
