// CSRF tokens are derived from the session token, never stored: no CSRF
// token (nor session token) is found in the data directory or in Redis, and
// cookie-authenticated changes still need the right one. A planted copy
// proves the scan would find a token that is there.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import t, { type Test } from "tap";
import { startReplicas } from "../support/replicas.ts";
import { field, signup, startTestTroupe, str, type TestTroupe } from "../support/troupe.ts";

interface Grant {
  session: string;
  csrf: string;
}

async function makeSessions(troupe: TestTroupe): Promise<Grant[]> {
  const user = await signup(troupe, "csrf");
  const grants: Grant[] = [{ session: user.token, csrf: user.csrf }];
  for (let i = 0; i < 2; i++) {
    const res = await troupe.request("POST", "/v1/auth/login", { body: { email: user.email, password: "correct horse battery" } });
    grants.push({ session: str(res.body, "session_token"), csrf: str(res.body, "csrf_token") });
  }
  return grants;
}

function needles(grant: Grant): Buffer[] {
  return [Buffer.from(grant.csrf), Buffer.from(grant.csrf, "base64url"), Buffer.from(grant.session), Buffer.from(grant.session.replace(/^sess_/, ""))];
}

function found(bytes: Buffer, grants: Grant[]): string[] {
  return grants.filter((g) => needles(g).some((n) => bytes.includes(n))).map((g) => g.csrf.slice(0, 8));
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

async function checkCsrfEnforced(t: Test, troupe: TestTroupe, grants: Grant[]): Promise<void> {
  const [mine, other] = grants;
  if (!mine || !other) throw new Error("two sessions needed");
  const cookie = `troupe_session=${mine.session}; troupe_csrf=${mine.csrf}`;
  const none = await troupe.request("POST", "/v1/orgs", { headers: { cookie }, body: { name: "x" } });
  t.equal(none.status, 403, "no CSRF header: refused");
  const foreign = await troupe.request("POST", "/v1/orgs", { headers: { cookie, "x-csrf-token": other.csrf }, body: { name: "x" } });
  t.equal(foreign.status, 403, "another session's CSRF token: refused");
  t.match(field(foreign.body, "error", "message"), /CSRF/);
  const ok = await troupe.request("POST", "/v1/orgs", { headers: { cookie, "x-csrf-token": mine.csrf }, body: { name: "x" } });
  t.equal(ok.status, 201, "its own CSRF token: accepted");
  const malformed = await troupe.request("GET", "/v1/account", { headers: { cookie: "troupe_session=%E0%A4%A" } });
  t.equal(malformed.status, 401, "a cookie with broken percent-encoding is no credential (401, not 500)");
}


t.test("embedded: no CSRF or session token in the data directory; CSRF still enforced", async (t) => {
  const troupe = await startTestTroupe();
  const grants = await makeSessions(troupe);
  await checkCsrfEnforced(t, troupe, grants);
  await troupe.stop();
  const files = filesUnder(troupe.dataDir);
  t.ok(files.length > 0);
  t.same(files.flatMap((f) => found(readFileSync(f), grants)), [], "no token bytes at rest");
  const planted = join(troupe.dataDir, "planted.bin");
  writeFileSync(planted, Buffer.concat([Buffer.from("xx"), Buffer.from(grants[0]?.csrf ?? ""), Buffer.from("yy")]));
  t.equal(found(readFileSync(planted), grants).length, 1, "the scan finds a CSRF token that is there");
});

t.test("redis: no CSRF or session token in any key or value; CSRF enforced across replicas", async (t) => {
  const cluster = await startReplicas(2);
  t.teardown(() => cluster.stop());
  const [a, b] = cluster.replicas as [TestTroupe, TestTroupe];
  const grants = await makeSessions(a);
  await checkCsrfEnforced(t, b, grants);
  const client = new Redis(cluster.redisUrl);
  const dumped: Buffer[] = [];
  for (const k of await client.keys("troupe:*")) {
    dumped.push(Buffer.from(k));
    if ((await client.type(k)) === "string") dumped.push((await client.getBuffer(k)) ?? Buffer.alloc(0));
  }
  await client.quit();
  t.ok(dumped.length > 10, `scanned ${dumped.length} redis entries`);
  t.same(found(Buffer.concat(dumped), grants), []);
});
