// Traces on an embedded Troupe, exported over OTLP/HTTP to a local receiver
// (test/support/otlp-receiver.ts): an agent turn that calls a tool makes a
// gateway span, an actor span and provider spans, all in the trace the
// caller's `traceparent` names and linked parent to child. Without
// OTEL_EXPORTER_OTLP_ENDPOINT nothing is exported.
import t from "tap";
import { startOtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.ts";
import { signup, startTestTroupe, str } from "../support/troupe.ts";

const receiver = await startOtlpReceiver();
const troupe = await startTestTroupe({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: "troupe-test" });
t.teardown(async () => {
  await troupe.stop();
  await receiver.close();
});
const user = await signup(troupe, "tracing");

const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
const callerSpanId = "00f067aa0ba902b7";

t.test("an agent turn with a tool call: gateway → actor → provider spans under the caller's trace", async (t) => {
  const created = await troupe.request("POST", "/v1/agents/conversations", { token: user.testKey, body: { model: "simulated-chat" } });
  const id = str(created.body, "id");
  const sent = await troupe.request("POST", `/v1/agents/conversations/${id}/messages`, {
    token: user.testKey,
    headers: { traceparent: `00-${traceId}-${callerSpanId}-01` },
    body: { content: "remember: the sky is green; then answer" },
  });
  t.equal(sent.status, 200);
  const inTrace = (spans: ReceivedSpan[]) => spans.filter((s) => s.traceId === traceId);
  const spans = inTrace(await receiver.waitFor((all) => inTrace(all).filter((s) => s.name.startsWith("provider ")).length >= 3));
  const gateway = spans.find((s) => s.name === "POST /v1/agents/conversations/:id/messages");
  t.ok(gateway, "the gateway's span");
  t.equal(gateway?.parentSpanId, callerSpanId, "continues the caller's traceparent");
  t.equal(gateway?.kind, 2, "a server span");
  t.equal(gateway?.attributes["http.response.status_code"], 200);
  const actor = spans.find((s) => s.name === "actor ConversationActor.postMessage");
  t.ok(actor, `the actor's span (${spans.map((s) => s.name).join(", ")})`);
  t.equal(actor?.parentSpanId, gateway?.spanId, "the actor turn is the gateway span's child");
  t.equal(actor?.attributes["troupe.actor.id"], id);
  const providers = spans.filter((s) => s.name.startsWith("provider "));
  t.ok(providers.length >= 3, `two model calls around the tool and the memory's embedding (${providers.map((s) => s.name).join(", ")})`);
  t.ok(providers.every((s) => s.parentSpanId === actor?.spanId), "every provider call is the actor turn's child");
  t.ok(providers.some((s) => s.attributes["gen_ai.request.model"] === "simulated-chat" && s.attributes["troupe.outcome"] === "success"));
  t.ok(providers.some((s) => s.attributes["gen_ai.request.model"] === "simulated-embed"), "the remember tool's embedding call");
  t.ok(spans.every((s) => s.service === "troupe-test" && s.instance === "0"), "service name and replica on every span");
});

t.test("without a caller's traceparent a request starts its own trace", async (t) => {
  const res = await troupe.request("POST", "/v1/chat/completions", { token: user.testKey, body: { messages: [{ role: "user", content: "hi" }] } });
  t.equal(res.status, 200);
  const spans = await receiver.waitFor((all) => all.some((s) => s.name === "POST /v1/chat/completions"));
  const root = spans.find((s) => s.name === "POST /v1/chat/completions")!;
  t.equal(root.parentSpanId, undefined, "a root span");
  t.not(root.traceId, traceId);
  const provider = await receiver.waitFor((all) => all.some((s) => s.traceId === root.traceId && s.name.startsWith("provider ")));
  t.equal(provider.find((s) => s.traceId === root.traceId && s.name.startsWith("provider "))?.parentSpanId, root.spanId);
});

t.test("tracing off: nothing exported, the no-op tracer", async (t) => {
  const plain = await startTestTroupe();
  t.teardown(() => plain.stop());
  t.equal(plain.services.tracing.enabled, false);
  const before = receiver.spans.length;
  const u = await signup(plain, "untraced");
  t.equal((await plain.request("POST", "/v1/chat/completions", { token: u.testKey, body: { messages: [{ role: "user", content: "hi" }] } })).status, 200);
  // Longer than the traced Troupe's 1 s export delay: anything made would have arrived.
  await new Promise((r) => setTimeout(r, 1500));
  const late = receiver.spans.slice(before).map((s) => s.name);
  t.notOk(late.includes("POST /v1/auth/signup") || late.includes("POST /v1/chat/completions"), `no span from the untraced Troupe (${late.join(", ")})`);
});
