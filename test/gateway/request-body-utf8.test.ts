// Request bodies must be well-formed UTF-8. Before, invalid
// bytes decoded to U+FFFD, so two different Latin-1 passwords became the
// same string: a signup with `pass\xe9…` could be logged into with
// `pass\xe8…`. Now such a body is 400 invalid_request naming the byte.
import t from "tap";
import { field, startTestTroupe } from "../support/troupe.ts";

const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());

/** A JSON body whose password is raw bytes (not JSON-escaped). */
function bodyWithPassword(email: string, passwordBytes: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`{"email":"${email}","password":"`), passwordBytes, Buffer.from('"}')]);
}
const post = (path: string, body: Buffer) => troupe.request("POST", path, { rawBody: body, headers: { "content-type": "application/json" } });

t.test("a body with Latin-1 bytes is refused: signup and login are 400 naming the byte, never a shared account", async (t) => {
  const email = `latin1-${Date.now()}@example.test`;
  const e9 = Buffer.from("correct horse b\xe9ttery", "latin1");
  const e8 = Buffer.from("correct horse b\xe8ttery", "latin1");
  const signup = await post("/v1/auth/signup", bodyWithPassword(email, e9));
  t.equal(signup.status, 400, signup.text);
  t.equal(field(signup.body, "error", "code"), "invalid_request");
  t.match(field(signup.body, "error", "message"), /not valid UTF-8 \(byte 0xe9 at offset \d+\)/);
  t.match(field(signup.body, "error", "details"), [{ path: "body", message: /invalid UTF-8/ }]);
  const login = await post("/v1/auth/login", bodyWithPassword(email, e8));
  t.equal(login.status, 400, `login with other Latin-1 bytes: ${login.text}`);
  t.match(field(login.body, "error", "message"), /byte 0xe8/);
});

t.test("other ill-formed sequences are refused too: surrogates, overlongs, a cut sequence", async (t) => {
  for (const bad of [Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xe2, 0x82]), Buffer.from([0xf4, 0x90, 0x80, 0x80])]) {
    const res = await post("/v1/auth/login", bodyWithPassword("a@example.test", bad));
    t.equal(res.status, 400, `${bad.toString("hex")}: ${res.text}`);
    t.match(field(res.body, "error", "message"), /not valid UTF-8/);
  }
});

t.test("well-formed UTF-8 still works: the same password in UTF-8 signs up and logs in", async (t) => {
  const email = `utf8-${Date.now()}@example.test`;
  const password = Buffer.from("correct horse bättery 🐎", "utf8");
  t.equal((await post("/v1/auth/signup", bodyWithPassword(email, password))).status, 201);
  t.equal((await post("/v1/auth/login", bodyWithPassword(email, password))).status, 200);
  const other = await post("/v1/auth/login", bodyWithPassword(email, Buffer.from("correct horse bèttery 🐎", "utf8")));
  t.equal(other.status, 401, "a different accented letter is a different password");
});
