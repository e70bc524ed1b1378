// Everything under a compatible mount answers in that mount's error shape:
// an unrouted path (a 404 saying the endpoint, not a model, does not exist),
// a wrong method, an oversized body and a bad credential on /openai/v1
// ({"error":{message,type,param,code}}) and on /anthropic
// ({"type":"error","error":{type,message}}); HEAD on each mount's root is the
// preflight Claude Code sends, answered 200 with no body.
import t, { type Test } from "tap";
import { request, signup, startTestTroupe } from "../../support/troupe.ts";

t.setTimeout(60_000);
// A small body limit, so "oversized" is cheap to send.
const troupe = await startTestTroupe({ MAX_BODY_BYTES: "4096" });
t.teardown(() => troupe.stop());
const user = await signup(troupe, "mount-errors");
const base = `http://127.0.0.1:${troupe.port}`;
const big = JSON.stringify({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "x".repeat(10_000) }] });

function openAiShape(t: Test, body: unknown, type: string): void {
  const error = (body as { error?: Record<string, unknown> }).error ?? {};
  t.same(Object.keys(error).sort(), ["code", "message", "param", "type"], "OpenAI's four fields");
  t.equal(error["type"], type);
  t.type(error["message"], "string");
  t.notOk((body as { type?: unknown }).type, "not the Anthropic shape");
}

function anthropicShape(t: Test, body: unknown, type: string): void {
  t.match(body, { type: "error", error: { type, message: String } });
}

t.test("/openai/v1: an unrouted path is invalid_request_error naming the endpoint, not a model", async (t) => {
  const res = await request(base, "POST", "/openai/v1/foo", { token: user.testKey, body: {} });
  t.equal(res.status, 404);
  openAiShape(t, res.body, "invalid_request_error");
  const message = (res.body as { error: { message: string; code: string } }).error.message;
  t.match(message, /^Unknown request URL: POST \/openai\/v1\/foo/);
  t.notMatch(message, /model/i);
});

t.test("/openai/v1: a wrong method is 405 in OpenAI's shape, with Allow", async (t) => {
  const res = await request(base, "GET", "/openai/v1/chat/completions", { token: user.testKey });
  t.equal(res.status, 405);
  openAiShape(t, res.body, "invalid_request_error");
  t.equal(res.headers.get("allow"), "POST");
});

t.test("/openai/v1: an oversized body is 413 in OpenAI's shape", async (t) => {
  const res = await request(base, "POST", "/openai/v1/chat/completions", { token: user.testKey, rawBody: big, headers: { "content-type": "application/json" } });
  t.equal(res.status, 413);
  openAiShape(t, res.body, "invalid_request_error");
});

t.test("/openai/v1: a bad key is 401 authentication_error", async (t) => {
  const res = await request(base, "POST", "/openai/v1/chat/completions", { token: "trp_test_not-a-key", body: { model: "gpt-4.1-mini", messages: [{ role: "user", content: "hi" }] } });
  t.equal(res.status, 401);
  openAiShape(t, res.body, "authentication_error");
});

t.test("/anthropic: unrouted, wrong method, oversized, bad key in Anthropic's shape", async (t) => {
  const unrouted = await request(base, "POST", "/anthropic/v1/foo", { token: user.testKey, body: {} });
  t.equal(unrouted.status, 404);
  anthropicShape(t, unrouted.body, "not_found_error");
  t.match((unrouted.body as { error: { message: string } }).error.message, /Unknown request URL: POST \/anthropic\/v1\/foo/);
  const wrong = await request(base, "GET", "/anthropic/v1/messages", { token: user.testKey });
  t.equal(wrong.status, 405);
  anthropicShape(t, wrong.body, "invalid_request_error");
  const oversized = await request(base, "POST", "/anthropic/v1/messages", { token: user.testKey, rawBody: big, headers: { "content-type": "application/json" } });
  t.equal(oversized.status, 413);
  anthropicShape(t, oversized.body, "request_too_large");
  const badKey = await request(base, "POST", "/anthropic/v1/messages", {
    headers: { "x-api-key": "trp_test_not-a-key" },
    body: { model: "claude-haiku-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] },
  });
  t.equal(badKey.status, 401);
  anthropicShape(t, badKey.body, "authentication_error");
});

t.test("HEAD on a mount's root: 200, no body; elsewhere the plain shape stays", async (t) => {
  for (const path of ["/openai/v1", "/anthropic", "/anthropic/"]) {
    const res = await fetch(`${base}${path}`, { method: "HEAD" });
    t.equal(res.status, 200, path);
    t.equal(await res.text(), "", `${path}: no body`);
  }
  const outside = await request(base, "POST", "/nowhere", { body: {} });
  t.equal(outside.status, 404);
  t.match(outside.body, { error: { code: "not_found" } }, "Troupe's own shape outside the mounts");
});
