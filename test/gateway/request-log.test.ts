// The request line an operator reads: one info-level JSON line per request,
// read here from the logger's own output, for a route (its template, not the
// concrete path), a request no route took (404, with its path), a 405, a
// HEAD, and a page. Each carries the status, the duration, the body bytes
// sent and the query with credential values redacted.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { loadConfig } from "../../gateway/config.ts";
import { createLogger } from "../../core/log.ts";
import { startTroupe } from "../../gateway/app.ts";
import { redactQuery } from "../../gateway/request-log.ts";
import { request, signup } from "../support/troupe.ts";
import { raw } from "./raw-http.ts";

const lines: string[] = [];
const config = loadConfig({ LOG_LEVEL: "info", HOST: "127.0.0.1", PORT: "0", SHUTDOWN_GRACE_MS: "2000", SIGNUP_LIMIT_PER_ADDRESS: "1000000", TROUPE_DATA_DIR: mkdtempSync(join(tmpdir(), "troupe-request-log-")) });
const running = await startTroupe(config, createLogger("info", {}, (line) => lines.push(line)), {});
t.teardown(() => running.stop());
const base = `http://127.0.0.1:${running.port}`;
const troupe = { request: (method: string, path: string, opts = {}) => request(base, method, path, opts) };
const user = await signup(troupe, "request-log");

/** The request line written for `requestId` (it is written as the answer leaves, so it may trail the answer by a turn). */
async function lineFor(requestId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 50; i++) {
    for (const text of lines) {
      const record: unknown = JSON.parse(text);
      if (typeof record === "object" && record !== null && "msg" in record && record.msg === "request" && "request_id" in record && record.request_id === requestId) {
        return record as Record<string, unknown>;
      }
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no request line for ${requestId}`);
}

async function call(method: string, path: string, requestId: string, headers: Record<string, string> = {}) {
  const res = await fetch(base + path, { method, headers: { "x-request-id": requestId, ...headers } });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, bytes: body.length };
}

t.test("a route's line: its template, status, duration, bytes and the query with credentials redacted", async (t) => {
  const secrets = ["s3cret-a", "s3cret-b", "s3cret-c", "s3cret-d", "s3cret-e"];
  const query = `key=${secrets[0]}&api-key=${secrets[1]}&api_key=${secrets[2]}&token=${secrets[3]}&access_token=${secrets[4]}&limit=5`;
  const res = await call("GET", `/v1/jobs/job_doesnotexist?${query}`, "log-route", { authorization: `Bearer ${user.testKey}` });
  t.equal(res.status, 404);
  const line = await lineFor("log-route");
  t.equal(line["level"], "info");
  t.equal(line["method"], "GET");
  t.equal(line["route"], "/v1/jobs/:id", "the template, not the concrete path");
  t.notOk("path" in line, "no concrete path when a route took it");
  t.equal(line["status"], 404);
  t.equal(line["bytes"], res.bytes, "the body bytes the client received");
  t.type(line["duration_ms"], "number");
  t.ok(Number(line["duration_ms"]) >= 0 && Number(line["duration_ms"]) < 5_000, `duration ${String(line["duration_ms"])} ms`);
  t.equal(line["query"], "key=[redacted]&api-key=[redacted]&api_key=[redacted]&token=[redacted]&access_token=[redacted]&limit=5");
  t.equal(line["aborted"], false);
  const everything = lines.join("");
  for (const secret of secrets) t.notOk(everything.includes(secret), `${secret} is in no log line`);
  t.notOk(everything.includes("job_doesnotexist"), "the concrete id is in no log line");
});

t.test("a request no route took: 404 with its concrete path, and 405 with the path's template", async (t) => {
  const res = await call("GET", "/no/such/thing?sig=abc&page=2", "log-unrouted");
  t.equal(res.status, 404);
  const line = await lineFor("log-unrouted");
  t.match(line, { method: "GET", route: null, path: "/no/such/thing", status: 404, bytes: res.bytes, query: "sig=[redacted]&page=2" });
  t.type(line["duration_ms"], "number");

  const wrong = await call("DELETE", "/v1/jobs", "log-405");
  t.equal(wrong.status, 405);
  t.match(await lineFor("log-405"), { method: "DELETE", route: "/v1/jobs", status: 405, bytes: wrong.bytes, query: "" });
  t.notOk("path" in (await lineFor("log-405")), "a 405 has a template to show");
});

t.test("HEAD: logged as HEAD, its status, no body bytes", async (t) => {
  const routed = await call("HEAD", "/v1/models", "log-head-route", { authorization: `Bearer ${user.testKey}` });
  t.equal(routed.status, 200);
  t.match(await lineFor("log-head-route"), { method: "HEAD", route: "/v1/models", status: 200, bytes: 0 });

  // Over a raw socket: the 404 HEAD answers no body, so fetch and the log agree on 0 bytes.
  // (Not a mount root: HEAD /anthropic is the 200 preflight answer, gateway/unrouted.ts.)
  await raw(running.port, "HEAD /nowhere?api_key=zzz HTTP/1.1\r\nhost: x\r\nx-request-id: log-head-404\r\nconnection: close\r\n\r\n");
  t.match(await lineFor("log-head-404"), { method: "HEAD", route: null, path: "/nowhere", status: 404, bytes: 0, query: "api_key=[redacted]" });
});

t.test("a plain page and the files path have their line too", async (t) => {
  const health = await call("GET", "/healthz", "log-page");
  t.match(await lineFor("log-page"), { method: "GET", route: "/healthz", status: 200, bytes: health.bytes, query: "" });
  const file = await call("GET", "/v1/files/file_AAAAAAAAAAAAAAAAAAAAAA", "log-file");
  t.equal(file.status, 404);
  const line = await lineFor("log-file");
  t.match(line, { method: "GET", route: "/v1/files/:id", status: 404, bytes: file.bytes });
  t.notOk(JSON.stringify(line).includes("file_AAAA"), "a file's id (its capability) is not logged");
});

t.test("redactQuery: credential names in any case and encoding, values of other parameters as sent", async (t) => {
  t.equal(redactQuery(""), "");
  t.equal(redactQuery("KEY=a&X-Amz-Signature=b&X-Amz-Credential=c&client_secret=d&password=e"), "KEY=[redacted]&X-Amz-Signature=[redacted]&X-Amz-Credential=[redacted]&client_secret=[redacted]&password=[redacted]");
  t.equal(redactQuery("api%5Fkey=a&apikey=b&id_token=c"), "api%5Fkey=[redacted]&apikey=[redacted]&id_token=[redacted]", "a percent-encoded name is matched decoded");
  t.equal(redactQuery("q=a%20b&monkey=1&key_id=k&flag&limit=10"), "q=a%20b&monkey=1&key_id=k&flag&limit=10", "`key` is a credential as the whole name only");
  t.equal(redactQuery("%zz=1&model=gpt"), "%zz=1&model=gpt", "a malformed escape is matched as sent");
});
