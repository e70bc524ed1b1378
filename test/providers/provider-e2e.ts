// Shared by the tests of single providers end to end (azure, mistral): a
// Troupe started in embedded mode from the given settings (the gateway builds
// its router from config, as in production), a signed-up key, and the chat
// conversations every provider must get through over HTTP: plain, streamed,
// and a tool round trip in both forms.
import type { Test } from "tap";
import { field, signup, startTestTroupe, type TestTroupe } from "../support/troupe.ts";

export interface Started {
  /** One embedded Troupe, or (the Dapr-mode test) a client of a replica. */
  troupe: Pick<TestTroupe, "request" | "port">;
  key: string;
}

export async function startWith(env: Record<string, string>): Promise<Started & { troupe: TestTroupe }> {
  const troupe = await startTestTroupe({ PROVIDER_TIMEOUT_MS: "5000", ...env });
  const user = await signup(troupe, "provider");
  return { troupe, key: user.testKey };
}

export function post(s: Started, path: string, body: unknown) {
  return s.troupe.request("POST", path, { token: s.key, body });
}

/** POSTs a streamed chat and reads its `data:` events. */
export async function postSse(s: Started, body: unknown): Promise<{ status: number; events: Record<string, unknown>[]; done: boolean; raw: string }> {
  const res = await fetch(`http://127.0.0.1:${s.troupe.port}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${s.key}`, "content-type": "application/json" },
    body: JSON.stringify({ ...(body as object), stream: true }),
  });
  const raw = await res.text();
  const events: Record<string, unknown>[] = [];
  let done = false;
  for (const frame of raw.split("\n\n")) {
    if (!frame.startsWith("data: ")) continue;
    if (frame === "data: [DONE]") done = true;
    else events.push(JSON.parse(frame.slice(6)) as Record<string, unknown>);
  }
  return { status: res.status, events, done, raw };
}

export const weatherTool = {
  name: "get_weather",
  description: "Weather for a city",
  parameters: { type: "object", properties: { input: { type: "string" } }, required: ["input"] },
};

type Call = { id: string; name: string; arguments: Record<string, unknown> };

/** Plain and streamed answers from `model` served by `provider` (the fakes echo the last user text). */
export async function plainAndStreamed(t: Test, s: Started, model: string, provider: string): Promise<void> {
  const body = { model, routing_strategy: "manual", messages: [{ role: "user", content: "hello from troupe" }] };
  const r = await post(s, "/v1/chat/completions", body);
  t.equal(r.status, 200, r.text);
  t.match(r.body, { content: "Echo: hello from troupe", finish_reason: "stop", model, provider, tool_calls: null });
  t.ok(Number(field(r.body, "input_tokens")) > 0 && Number(field(r.body, "output_tokens")) > 0, "usage counted");
  const st = await postSse(s, body);
  t.equal(st.status, 200, st.raw);
  t.ok(st.done, "ends with [DONE]");
  t.equal(st.events.filter((e) => "delta" in e).map((e) => e.delta).join(""), "Echo: hello from troupe");
  t.match(st.events.at(-1), { finish_reason: "stop", model, provider });
  t.ok(Number(st.events.at(-1)!.input_tokens) > 0 && Number(st.events.at(-1)!.output_tokens) > 0, "streamed usage counted");
}

/** A tool call and its answer, JSON or SSE. */
export async function toolRoundTrip(t: Test, s: Started, model: string, stream: boolean): Promise<Call[]> {
  const messages: Record<string, unknown>[] = [{ role: "user", content: "Paris" }];
  const body = () => ({ model, routing_strategy: "manual", messages, tools: [weatherTool] });
  let calls: Call[];
  if (stream) {
    const r = await postSse(s, body());
    t.equal(r.status, 200, r.raw);
    t.match(r.events.at(-1), { finish_reason: "tool_calls", model });
    calls = r.events.filter((e) => "tool_call" in e).map((e) => e.tool_call as Call);
  } else {
    const r = await post(s, "/v1/chat/completions", body());
    t.equal(r.status, 200, r.text);
    t.match(r.body, { finish_reason: "tool_calls", model });
    calls = field(r.body, "tool_calls") as Call[];
  }
  t.equal(calls.length, 1);
  t.match(calls[0], { name: "get_weather", arguments: { input: "Paris", n: 1 } });
  messages.push({ role: "assistant", content: "", tool_calls: calls }, { role: "tool", tool_call_id: calls[0]!.id, content: "sunny" });
  if (stream) {
    const r = await postSse(s, body());
    t.equal(r.events.filter((e) => "delta" in e).map((e) => e.delta).join(""), "Tool said: sunny");
    t.match(r.events.at(-1), { finish_reason: "stop" });
  } else {
    const r = await post(s, "/v1/chat/completions", body());
    t.equal(r.status, 200, r.text);
    t.match(r.body, { content: "Tool said: sunny", finish_reason: "stop", tool_calls: null });
  }
  return calls;
}
