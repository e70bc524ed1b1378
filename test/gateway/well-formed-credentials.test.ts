// Credentials that are not well-formed Unicode are refused with 400
// invalid_request naming the field. Before, a lone surrogate hashed as
// U+FFFD, so "\ud800"×10 and "\udfff"×10 logged into the same account.
import t from "tap";
import { field, startTestTroupe } from "../support/troupe.ts";

const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());

// JSON escapes keep the lone surrogates intact on the wire (a JS string sent as UTF-8 would not).
function raw(body: Record<string, string>): string {
  return "{" + Object.entries(body).map(([k, v]) => `${JSON.stringify(k)}:"${v}"`).join(",") + "}";
}

async function post(path: string, body: Record<string, string>) {
  return troupe.request("POST", path, { rawBody: raw(body), headers: { "content-type": "application/json" } });
}

t.test("signup refuses a lone-surrogate password and email", async (t) => {
  const email = `surrogate-${Date.now()}@example.test`;
  const res = await post("/v1/auth/signup", { email, password: "\\ud800".repeat(10) });
  t.equal(res.status, 400);
  t.equal(field(res.body, "error", "code"), "invalid_request");
  t.match(field(res.body, "error", "message"), /password/);
  t.same(field(res.body, "error", "details"), [{ path: "body.password", message: "is not well-formed Unicode (contains a lone surrogate)" }]);
  const login = await post("/v1/auth/login", { email, password: "\\udfff".repeat(10) });
  t.equal(login.status, 400, "and the twin password cannot log into anything");
  const badEmail = await post("/v1/auth/login", { email: "a\\udc00@example.test", password: "whatever-long" });
  t.equal(badEmail.status, 400);
  t.match(field(badEmail.body, "error", "message"), /^body\.email/);
});

t.test("login refuses a lone-surrogate password; a real surrogate pair is fine", async (t) => {
  const email = `pair-${Date.now()}@example.test`;
  const password = "\\ud83d\\ude00".repeat(10); // 😀 ×10: well-formed
  t.equal((await post("/v1/auth/signup", { email, password })).status, 201);
  t.equal((await post("/v1/auth/login", { email, password })).status, 200);
  const lone = await post("/v1/auth/login", { email, password: "\\ud83d".repeat(10) });
  t.equal(lone.status, 400);
  t.match(field(lone.body, "error", "message"), /password/);
});

t.test("an invitation token with a lone surrogate is refused", async (t) => {
  const email = `inv-${Date.now()}@example.test`;
  const signup = await post("/v1/auth/signup", { email, password: "correct horse battery" });
  const token = String(field(signup.body, "session_token"));
  const res = await troupe.request("POST", "/v1/invitations/accept", {
    rawBody: raw({ token: "inv_\\udfff" }),
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
  });
  t.equal(res.status, 400);
  t.match(field(res.body, "error", "message"), /^body\.token/);
});
