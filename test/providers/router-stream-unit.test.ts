// The router's streamed chat (providers/router.ts, chatStream) and its other
// entry points (chat, embed, the model and breaker listings, close) in
// process, over adapter doubles: each stream is a scripted sequence of
// events, failures and pauses, its iterator counting next() and return()
// calls and its pauses ending with the call's signal. What it proves:
// - failures before the first event fall back (an error, an empty stream, a
//   first event later than the attempt deadline), each recorded as the
//   attempt it was (breaker, latency, observer); once an event is out, a
//   failure, a missing finish event or the request deadline is thrown to the
//   consumer, with its code, text and attempt count, and nothing is retried;
// - after the first event only the request's deadline applies, until the
//   last event;
// - the finish event names the catalogue model and provider that served
//   (and byok, keeping the provider's extras); other events pass unchanged;
// - the upstream stream is disposed once, however the stream ends; stopping
//   before the finish event aborts the upstream call, stopping at it does
//   not; the request deadline is disposed with the stream;
// - which need a request plans with (streaming, tools, JSON, the category
//   its images or the caller choose, the caller's model allowlist);
// - chat's and embed's answers (the serving model, byok, the dimension a
//   fallback is asked for), and the listings a pool of deployments adds to.
// Fast on purpose: a mutation run (docs/testing.md) runs this file once per
// mutant. Deadlines are short real timers with wide margins.
import t from "tap";
import { TroupeError } from "../../core/errors.ts";
import { Catalogue, type ModelEntry } from "../../providers/catalogue.ts";
import type { ChatRequest } from "../../providers/chat-request.ts";
import { DeploymentPool } from "../../providers/deployment-pool.ts";
import { deploymentSpecSchema } from "../../providers/deployments-file.ts";
import { Deployments } from "../../providers/deployments.ts";
import { ProviderCallError } from "../../providers/errors.ts";
import type { OwnCredential } from "../../providers/own-credentials.ts";
import { withModelAllowlist } from "../../providers/router-allowlist.ts";
import { breakerOptionsOf } from "../../providers/router-health.ts";
import { Router, type AttemptObserver, type RouterOptions } from "../../providers/router.ts";
import type { ChatCallOptions, ChatResult, EmbedRequest, EmbedResult, ProviderAdapter, StreamEvent, StreamFinish } from "../../providers/types.ts";
import { catalogueModel } from "../support/catalogue-model.ts";
import { rejectedWith } from "../support/thrown-by.ts";

const model = catalogueModel;

// gpt-4.1-mini is called by another name upstream; the others by their ids. "plain-chat" does not
// stream, call tools or answer JSON, and serves text only (no vision, no translation).
const catalogue = new Catalogue([
  { ...model("gpt-4.1-mini"), upstream_model: "gpt-4.1-mini-2025-04-14" },
  model("claude-haiku-4-5"),
  model("gemini-2.5-flash"),
  { ...model("gpt-4.1-nano"), id: "plain-chat", also: [], capabilities: { max_input_tokens: 1000, max_output_tokens: 100 } },
  { id: "oa-768", provider: "openai", upstream_model: "text-embedding-3-small", category: "embedding", also: [], tier: "small", capabilities: { dimensions: 768, custom_dimensions: true }, pricing: { unit: "1M tokens", input_usd_per_unit: 0.02 } },
  { id: "co-1536", provider: "anthropic", category: "embedding", also: [], tier: "small", capabilities: { dimensions: 1536, custom_dimensions: true }, pricing: { unit: "1M tokens", input_usd_per_unit: 0.01 } },
]);

/** A step of a scripted stream: an event to yield, an error to throw, a pause (ended early, with the signal's reason, when the call's signal aborts). */
type Step = StreamEvent | Error | { pauseMs: number };

function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

/** One upstream stream as a double: its steps in order; past them, the end (done). */
class ScriptedStream implements AsyncIterator<StreamEvent> {
  nexts = 0;
  returns = 0;
  private readonly steps: Step[];
  private readonly signal: AbortSignal;
  private readonly returnFails: boolean;
  constructor(steps: Step[], signal: AbortSignal, returnFails: boolean) {
    this.steps = [...steps];
    this.signal = signal;
    this.returnFails = returnFails;
  }
  async next(): Promise<IteratorResult<StreamEvent>> {
    this.nexts++;
    for (;;) {
      const step = this.steps.shift();
      if (step === undefined) return { done: true, value: undefined };
      if (step instanceof Error) throw step;
      if ("pauseMs" in step) {
        await pause(step.pauseMs, this.signal);
        continue;
      }
      return { done: false, value: step };
    }
  }
  async return(): Promise<IteratorResult<StreamEvent>> {
    this.returns++;
    if (this.returnFails) throw new Error("closing the body failed");
    return { done: true, value: undefined };
  }
}

/** What one chatStream call of a double was given and made. */
interface StreamCall {
  upstreamModel: string | undefined;
  signal: AbortSignal;
  stream: ScriptedStream;
}

/** A provider whose streams follow the scripts given, one per call (past them: a short answer). */
class StreamingDouble implements ProviderAdapter {
  readonly provider: string;
  readonly calls: StreamCall[] = [];
  readonly chatCalls: ChatCallOptions[] = [];
  readonly embedCalls: EmbedRequest[] = [];
  readonly embedSignals: AbortSignal[] = [];
  closed = 0;
  private readonly scripts: Step[][];
  returnFails = false;
  chatAnswer: Partial<ChatResult> = {};
  constructor(provider: string, scripts: Step[][] = []) {
    this.provider = provider;
    this.scripts = scripts;
  }
  chatStream(_req: ChatRequest, opts: ChatCallOptions): AsyncIterable<StreamEvent> {
    const steps = this.scripts.shift() ?? [{ delta: "hi" }, finish()];
    const stream = new ScriptedStream(steps, opts.signal, this.returnFails);
    this.calls.push({ upstreamModel: opts.upstreamModel, signal: opts.signal, stream });
    return { [Symbol.asyncIterator]: () => stream };
  }
  async chat(_req: ChatRequest, opts: ChatCallOptions): Promise<ChatResult> {
    this.chatCalls.push(opts);
    return { content: `from ${this.provider}`, finish_reason: "stop", model: "upstream-name", provider: "upstream", input_tokens: 3, output_tokens: 2, tool_calls: null, ...this.chatAnswer };
  }
  async embed(req: EmbedRequest, opts: { signal: AbortSignal }): Promise<EmbedResult> {
    this.embedCalls.push(req);
    this.embedSignals.push(opts.signal);
    return { embeddings: [[0.5]], dimensions: req.dimensions ?? 1536, model: "upstream-name", provider: "upstream", input_tokens: 1 };
  }
  async close(): Promise<void> {
    this.closed++;
  }
}

function finish(extra: Partial<StreamFinish> = {}): StreamFinish {
  return { finish_reason: "stop", input_tokens: 7, output_tokens: 5, model: "upstream-name", provider: "upstream", ...extra };
}

function http(provider: string, status: number): ProviderCallError {
  return new ProviderCallError(provider, "http", `${provider} answered ${status}`, { status });
}

interface Setup {
  router: Router;
  openai: StreamingDouble;
  anthropic: StreamingDouble;
  seen: string[];
}

function setup(scripts: { openai?: Step[][]; anthropic?: Step[][] } = {}, opts: Partial<RouterOptions> = {}): Setup {
  const openai = new StreamingDouble("openai", scripts.openai);
  const anthropic = new StreamingDouble("anthropic", scripts.anthropic);
  const seen: string[] = [];
  const observer: AttemptObserver = {
    attempt(provider, m) {
      seen.push(`start ${provider} ${m}`);
      return (outcome) => seen.push(`${outcome} ${provider}`);
    },
  };
  const router = new Router({
    catalogue,
    adapters: new Map<string, ProviderAdapter>([
      ["openai", openai],
      ["anthropic", anthropic],
    ]),
    timeoutMs: 2_000,
    maxAttempts: 3,
    backoff: { initialDelayMs: 1, maxDelayMs: 1 },
    random: () => 1,
    observer,
    ...opts,
  });
  return { router, openai, anthropic, seen };
}

const hello = [{ role: "user" as const, content: "hello" }];
const mini: ChatRequest = { model: "gpt-4.1-mini", messages: hello };
const manualMini: ChatRequest = { model: "gpt-4.1-mini", routing_strategy: "manual", messages: hello };

/** Reads the whole stream: the events, and what it threw (undefined when it ended). */
async function drain(stream: AsyncIterable<StreamEvent>): Promise<{ events: StreamEvent[]; error: unknown }> {
  const events: StreamEvent[] = [];
  try {
    for await (const e of stream) events.push(e);
    return { events, error: undefined };
  } catch (error) {
    return { events, error };
  }
}

function troupeErrorOf(e: unknown): TroupeError {
  if (!(e instanceof TroupeError)) throw new Error(`expected a TroupeError, got ${String(e)}`);
  return e;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

t.test("the first attempt's stream is passed on; its finish event names the catalogue model and provider", async (t) => {
  const events: Step[] = [{ delta: "a" }, { tool_call: { id: "c1", name: "f", arguments: { x: 1 } } }, { reasoning_delta: "hm" }, finish({ extras: { reasoning_tokens: 4 } })];
  const s = setup({ openai: [events] }, { timeoutMs: 400 });
  const before = performance.now();
  const { events: got, error } = await drain(s.router.chatStream(mini));
  const took = performance.now() - before;
  t.equal(error, undefined);
  t.strictSame(got, [
    { delta: "a" },
    { tool_call: { id: "c1", name: "f", arguments: { x: 1 } } },
    { reasoning_delta: "hm" },
    { finish_reason: "stop", input_tokens: 7, output_tokens: 5, model: "gpt-4.1-mini", provider: "openai", extras: { reasoning_tokens: 4 } },
  ]);
  t.equal(s.openai.calls.length, 1);
  t.equal(s.anthropic.calls.length, 0);
  const call = s.openai.calls[0]!;
  t.equal(call.upstreamModel, "gpt-4.1-mini-2025-04-14", "the catalogue's upstream name");
  t.equal(call.stream.nexts, 4, "read to the finish event, not past it");
  t.equal(call.stream.returns, 1, "disposed once");
  t.same(s.seen, ["start openai gpt-4.1-mini", "success openai"]);
  const latency = s.router.latency.get("gpt-4.1-mini") ?? -1;
  t.ok(latency >= 0 && latency <= took, `time to the first event recorded (${latency} ms, within the ${took} ms the stream took)`);
  await delay(600);
  t.equal(call.signal.aborted, false, "a finished stream is not aborted, and its request deadline was disposed");
});

t.test("a finish event as the first event ends the stream; without extras none is added", async (t) => {
  const s = setup({ anthropic: [[finish()]] });
  const { events } = await drain(s.router.chatStream({ model: "claude-haiku-4-5", messages: hello }));
  t.strictSame(events, [{ finish_reason: "stop", input_tokens: 7, output_tokens: 5, model: "claude-haiku-4-5", provider: "anthropic" }]);
  t.equal(s.anthropic.calls[0]?.upstreamModel, "claude-haiku-4-5", "no upstream name: the catalogue id");
  t.equal(s.anthropic.calls[0]?.stream.returns, 1);
});

t.test("a failure before the first event falls back, and counts against the provider", async (t) => {
  const s = setup({ openai: [[http("openai", 503)]] }, { breaker: { consecutiveFailures: 1, halfOpenAfterMs: 60_000 } });
  const { events, error } = await drain(s.router.chatStream(mini));
  t.equal(error, undefined);
  t.match(events.at(-1), { model: "claude-haiku-4-5", provider: "anthropic" });
  t.same(s.seen, ["start openai gpt-4.1-mini", "error openai", "start anthropic claude-haiku-4-5", "success anthropic"]);
  t.equal(s.router.healthOf("openai").state, "open", "the failed first event went through openai's breaker");
  t.equal(s.router.healthOf("anthropic").state, "closed");
  t.equal(s.router.latency.get("gpt-4.1-mini"), undefined, "a failed attempt's latency is not recorded");
  t.type(s.router.latency.get("claude-haiku-4-5"), "number");
  t.equal(s.openai.calls[0]?.signal.aborted, true, "the failed attempt's signal is aborted");
  t.equal(s.openai.calls[0]?.stream.returns, 0, "only the served stream is the router's to dispose");
  t.equal(s.anthropic.calls[0]?.stream.returns, 1);
});

t.test("an empty stream is a protocol failure: it falls back, and alone it is the caller's provider_error", async (t) => {
  const s = setup({ openai: [[]] });
  const { events } = await drain(s.router.chatStream(mini));
  t.match(events.at(-1), { provider: "anthropic" });
  const alone = setup({ openai: [[]] }, { maxAttempts: 1 });
  const { events: none, error } = await drain(alone.router.chatStream(manualMini));
  t.same(none, []);
  const e = troupeErrorOf(error);
  t.equal(e.code, "provider_error");
  t.equal(e.message, "openai sent an empty stream");
  t.match(e.cause, { kind: "protocol", retryable: false }, "a protocol failure: another provider, not the same one again");
  t.same(e.details, { provider: "openai", upstream_status: null, attempts: 1 });
});

t.test("the first event's deadline: a slow first event falls back; alone it is a provider_timeout", async (t) => {
  const slow: Step[] = [{ pauseMs: 1_000 }, { delta: "late" }, finish()];
  const s = setup({ openai: [slow] }, { attemptTimeoutMs: 40 });
  const started = performance.now();
  const { events, error } = await drain(s.router.chatStream(mini));
  t.equal(error, undefined);
  t.ok(performance.now() - started < 800, "the slow attempt was given up at its deadline");
  t.match(events.at(-1), { provider: "anthropic" });
  t.same(s.seen, ["start openai gpt-4.1-mini", "timeout openai", "start anthropic claude-haiku-4-5", "success anthropic"]);
  t.match(s.openai.calls[0]?.signal.reason, { kind: "timeout", message: "openai did not answer within 40 ms" });
  const alone = setup({ openai: [slow] }, { attemptTimeoutMs: 40, maxAttempts: 1 });
  const { error: timedOut } = await drain(alone.router.chatStream(manualMini));
  const e = troupeErrorOf(timedOut);
  t.equal(e.code, "provider_timeout");
  t.equal(e.message, "openai did not answer within 40 ms");
  t.same(e.details, { provider: "openai", upstream_status: null, attempts: 1 });
});

t.test("after the first event the attempt deadline no longer applies: slow events within the request deadline arrive", async (t) => {
  const s = setup({ openai: [[{ delta: "a" }, { pauseMs: 120 }, { delta: "b" }, finish()]] }, { attemptTimeoutMs: 30, timeoutMs: 1_000 });
  const { events, error } = await drain(s.router.chatStream(mini));
  t.equal(error, undefined);
  t.same(events.map((e) => ("delta" in e ? e.delta : "finish")), ["a", "b", "finish"]);
  t.equal(s.anthropic.calls.length, 0);
});

t.test("the request deadline lasts until the last event: a stall after the first event is a provider_timeout, not retried", async (t) => {
  const s = setup({ openai: [[{ delta: "a" }, { pauseMs: 2_000 }, finish()]] }, { timeoutMs: 150, attemptTimeoutMs: 100 });
  const started = performance.now();
  const { events, error } = await drain(s.router.chatStream(mini));
  t.ok(performance.now() - started < 1_500);
  t.same(events, [{ delta: "a" }]);
  const e = troupeErrorOf(error);
  t.equal(e.code, "provider_timeout");
  t.equal(e.message, "no answer within the 150 ms deadline");
  t.same(e.details, { provider: "router", upstream_status: null, attempts: 1 });
  t.equal(s.anthropic.calls.length, 0, "no fallback once an event was out");
  t.equal(s.openai.calls[0]?.stream.returns, 1);
});

t.test("a failure after the first event is the consumer's: no fallback, one attempt counted", async (t) => {
  const s = setup({ openai: [[{ delta: "a" }, { delta: "b" }, http("openai", 502)]] });
  const { events, error } = await drain(s.router.chatStream(mini));
  t.same(events, [{ delta: "a" }, { delta: "b" }]);
  const e = troupeErrorOf(error);
  t.equal(e.code, "provider_error");
  t.equal(e.message, "openai answered 502");
  t.same(e.details, { provider: "openai", upstream_status: 502, attempts: 1 });
  t.equal(s.anthropic.calls.length, 0);
  const call = s.openai.calls[0]!;
  t.equal(call.stream.returns, 1, "disposed once");
  t.equal(call.signal.aborted, true, "an unfinished stream's call is aborted");
  t.match(call.signal.reason, { message: "stream consumer stopped" });
  t.same(s.seen, ["start openai gpt-4.1-mini", "success openai"], "the attempt ended at its first event");
});

t.test("a stream that ends without a finish event is a provider_error", async (t) => {
  const s = setup({ openai: [[{ delta: "a" }]] });
  const { events, error } = await drain(s.router.chatStream(mini));
  t.same(events, [{ delta: "a" }]);
  const e = troupeErrorOf(error);
  t.equal(e.code, "provider_error");
  t.equal(e.message, "openai stream ended without a finish event");
  t.equal(s.anthropic.calls.length, 0);
  t.equal(s.openai.calls[0]?.stream.returns, 1);
});

t.test("a consumer stopping before the finish event aborts the upstream call; stopping at it does not", async (t) => {
  const s = setup({ openai: [[{ delta: "a" }, { delta: "b" }, finish()], [{ delta: "a" }, finish()]] }, { timeoutMs: 300 });
  for await (const e of s.router.chatStream(mini)) {
    t.same(e, { delta: "a" });
    break;
  }
  const early = s.openai.calls[0]!;
  t.equal(early.signal.aborted, true);
  t.match(early.signal.reason, { message: "stream consumer stopped" });
  t.equal(early.stream.returns, 1);
  t.equal(early.stream.nexts, 1, "nothing read past what was asked");
  for await (const e of s.router.chatStream(mini)) {
    if ("finish_reason" in e) break;
  }
  const atFinish = s.openai.calls[1]!;
  t.equal(atFinish.stream.returns, 1);
  await delay(600);
  t.equal(atFinish.signal.aborted, false, "stopped at the finish event: nothing aborted, the deadline disposed");
});

t.test("disposal: a stream without return() and one whose return() fails both end cleanly", async (t) => {
  const s = setup();
  s.openai.returnFails = true;
  const { events, error } = await drain(s.router.chatStream(mini));
  t.equal(error, undefined, "a failing close is not the consumer's");
  t.match(events.at(-1), { provider: "openai" });
  t.equal(s.openai.calls[0]?.stream.returns, 1);
  const bare: ProviderAdapter = {
    provider: "openai",
    chat: () => Promise.reject(new Error("not called")),
    chatStream: () => {
      const steps: StreamEvent[] = [{ delta: "x" }, finish()];
      return { [Symbol.asyncIterator]: () => ({ next: async () => (steps.length > 0 ? { done: false, value: steps.shift()! } : { done: true, value: undefined }) }) };
    },
  };
  const r = new Router({ catalogue, adapters: new Map([["openai", bare]]), timeoutMs: 1_000, maxAttempts: 1 });
  const plain = await drain(r.chatStream(manualMini));
  t.equal(plain.error, undefined);
  t.equal(plain.events.length, 2);
});

t.test("every attempt failing before an event: the last failure, and nothing to dispose", async (t) => {
  const s = setup({ openai: [[http("openai", 503)], [http("openai", 503)]], anthropic: [[http("anthropic", 500)]] });
  const { events, error } = await drain(s.router.chatStream(mini));
  t.same(events, []);
  const e = troupeErrorOf(error);
  t.equal(e.code, "provider_error");
  t.same(e.details, { provider: "openai", upstream_status: 503, attempts: 3 });
  t.same(s.seen, ["start openai gpt-4.1-mini", "error openai", "start anthropic claude-haiku-4-5", "error anthropic", "start openai gpt-4.1-mini", "error openai"]);
});

t.test("the organization's own key: its adapter streams, the finish event says byok and keeps the provider's extras", async (t) => {
  const own = new StreamingDouble("openai", [[{ delta: "a" }, finish({ extras: { cached_input_tokens: 2 } })]]);
  const credential: OwnCredential = { adapter: own, label: "org …abcd", allowFallback: false };
  const s = setup({}, { ownCredentials: (p) => (p === "openai" ? Promise.resolve(credential) : undefined) });
  const { events } = await drain(s.router.chatStream(mini));
  t.strictSame(events.at(-1), { finish_reason: "stop", input_tokens: 7, output_tokens: 5, model: "gpt-4.1-mini", provider: "openai", extras: { cached_input_tokens: 2, byok: true } });
  t.equal(own.calls.length, 1);
  t.equal(s.openai.calls.length, 0);
  t.equal(own.calls[0]?.stream.returns, 1);
  const noExtras = new StreamingDouble("openai", [[finish()]]);
  const plain = setup({}, { ownCredentials: async () => ({ adapter: noExtras, label: "k", allowFallback: false }) });
  const { events: bare } = await drain(plain.router.chatStream(mini));
  t.strictSame(bare.at(-1), { finish_reason: "stop", input_tokens: 7, output_tokens: 5, model: "gpt-4.1-mini", provider: "openai", extras: { byok: true } });
});

t.test("a stream plans for streaming; chat does not", async (t) => {
  const s = setup();
  const e = await rejectedWith(drain(s.router.chatStream({ model: "plain-chat", messages: hello })).then((r) => Promise.reject(r.error)));
  t.equal(e.code, "invalid_request");
  t.match(e.details, [{ path: "body.stream", message: "model plain-chat does not support streaming" }]);
  t.equal(s.openai.calls.length, 0, "refused before any call");
  const res = await s.router.chat({ model: "plain-chat", messages: hello });
  t.equal(res.model, "plain-chat");
});

t.test("chat plans for tools only when some are given, JSON when response_format is, vision for images", async (t) => {
  const s = setup();
  const tool = { name: "f", description: "", parameters: { type: "object", properties: {} } };
  t.equal((await s.router.chat({ model: "plain-chat", messages: hello, tools: [] })).model, "plain-chat", "no tools: no tools needed");
  const tools = await rejectedWith(s.router.chat({ model: "plain-chat", messages: hello, tools: [tool] }));
  t.match(tools.details, [{ path: "body.tools", message: "model plain-chat does not support tools" }]);
  const json = await rejectedWith(s.router.chat({ model: "plain-chat", messages: hello, response_format: { type: "json_object" } }));
  t.match(json.details, [{ message: "model plain-chat cannot be held to a JSON answer (response_format)" }]);
  const images = await rejectedWith(s.router.chat({ model: "plain-chat", messages: [{ role: "user", content: "what is it", images: [{ url: "https://x.example/a.png" }] }] }));
  t.match(images.details, [{ path: "body.model", message: "model plain-chat is a text model and cannot serve vision requests" }]);
  t.equal((await s.router.chat({ model: "plain-chat", messages: [{ role: "user", content: "x", images: [] }] })).model, "plain-chat", "an empty image list is text");
  const later = await rejectedWith(s.router.chat({ model: "plain-chat", messages: [hello[0]!, { role: "user", content: "and this?", images: [{ url: "https://x.example/b.png" }] }] }));
  t.match(later.details, [{ message: /cannot serve vision requests/ }], "any message with images makes it a vision request");
  const translation = await rejectedWith(s.router.chat({ model: "plain-chat", messages: hello }, { category: "translation" }));
  t.match(translation.details, [{ message: "model plain-chat is a text model and cannot serve translation requests" }]);
  t.equal((await s.router.chat({ messages: hello })).model, "gpt-4.1-mini", "no strategy: auto, the catalogue's first capable model");
  t.equal((await s.router.chat({ messages: hello, routing_strategy: "cost" })).model, "plain-chat", "the strategy asked: cost, the cheapest");
  const bad = await rejectedWith(s.router.chat({ model: "gpt-4.1-mini", messages: [{ role: "tool", tool_call_id: "nope", content: "r" }] }));
  t.equal(bad.code, "invalid_request", "the conversation is checked first");
  t.equal(s.openai.chatCalls.length, 4);
});

t.test("the caller's model allowlist: its own, none (null), else the request's", async (t) => {
  const s = setup();
  const onlyClaude = (m: ModelEntry) => m.provider === "anthropic";
  const own = await s.router.chat({ messages: hello }, { allowModel: onlyClaude });
  t.equal(own.provider, "anthropic");
  const fromRequest = await withModelAllowlist(onlyClaude, () => s.router.chat({ messages: hello }));
  t.equal(fromRequest.provider, "anthropic");
  const none = await withModelAllowlist(onlyClaude, () => s.router.chat({ model: "gpt-4.1-mini", messages: hello }, { allowModel: null }));
  t.equal(none.provider, "openai", "null: every model, whatever the request's context holds");
  const streamed = await withModelAllowlist(onlyClaude, () => drain(s.router.chatStream({ messages: hello })));
  t.match(streamed.events.at(-1), { provider: "anthropic" });
  const refused = await withModelAllowlist(onlyClaude, () => rejectedWith(s.router.embed({ model: "oa-768", input: ["x"] })));
  t.equal(refused.code, "model_not_allowed");
  const planned = withModelAllowlist(onlyClaude, () => s.router.plan(null, "auto", { category: "text" }));
  t.same(planned.map((m) => m.id), ["claude-haiku-4-5"], "plan's default: the request's allowlist");
});

t.test("chat's answer names the model and provider that served, and byok with the provider's extras", async (t) => {
  const s = setup({}, { breaker: { consecutiveFailures: 1, halfOpenAfterMs: 60_000 } });
  s.openai.chatAnswer = { extras: { reasoning_tokens: 9 } };
  const res = await s.router.chat(mini);
  t.strictSame(res, { content: "from openai", finish_reason: "stop", model: "gpt-4.1-mini", provider: "openai", input_tokens: 3, output_tokens: 2, tool_calls: null, extras: { reasoning_tokens: 9 } });
  t.equal(s.openai.chatCalls[0]?.upstreamModel, "gpt-4.1-mini-2025-04-14");
  const own = new StreamingDouble("openai");
  const byok = setup({}, { ownCredentials: async () => ({ adapter: own, label: "k", allowFallback: false }) });
  const served = await byok.router.chat(mini);
  t.strictSame(served.extras, { byok: true });
  t.equal(own.chatCalls.length, 1);
  const claude = await s.router.chat({ model: "claude-haiku-4-5", messages: hello });
  t.equal(s.anthropic.chatCalls[0]?.upstreamModel, "claude-haiku-4-5");
  t.notOk("extras" in claude, "no extras added");
});

t.test("embed: at least one text; a fallback is asked for the named model's dimension", async (t) => {
  const s = setup();
  const empty = await rejectedWith(s.router.embed({ model: "oa-768", input: [] }));
  t.equal(empty.code, "invalid_request");
  t.same(empty.details, [{ path: "body.input", message: "at least one text is needed" }]);
  t.equal(s.openai.embedCalls.length, 0);
  const named = await s.router.embed({ model: "oa-768", input: ["a"], input_type: "search_query" });
  t.strictSame(named, { embeddings: [[0.5]], dimensions: 1536, model: "oa-768", provider: "openai", input_tokens: 1 });
  t.same(s.openai.embedCalls[0], { model: "text-embedding-3-small", input: ["a"], dimensions: undefined, input_type: "search_query" }, "its own dimension: none asked");
  t.type(s.openai.embedSignals[0], AbortSignal, "the attempt's signal is passed on");
  const down = setup({}, { adapters: new Map<string, ProviderAdapter>([["anthropic", s.anthropic]]) });
  const fallback = await down.router.embed({ model: "oa-768", input: ["a"] });
  t.equal(fallback.model, "co-1536");
  t.same(s.anthropic.embedCalls[0], { model: "co-1536", input: ["a"], dimensions: 768, input_type: undefined }, "the named model's 768");
  await s.router.embed({ model: "oa-768", input: ["a"], dimensions: 256 });
  t.equal(s.openai.embedCalls[1]?.dimensions, 256, "an explicit dimension is asked as given");
  await s.router.embed({ input: ["a"], routing_strategy: "cost" });
  t.equal(s.anthropic.embedCalls[1]?.model, "co-1536", "no model: the strategy's pick, its own dimension");
  t.equal(s.anthropic.embedCalls[1]?.dimensions, undefined);
  const own = new StreamingDouble("openai");
  const byok = setup({}, { ownCredentials: (p) => (p === "openai" ? Promise.resolve({ adapter: own, label: "k", allowFallback: false }) : undefined) });
  const mine = await byok.router.embed({ model: "oa-768", input: ["a"] });
  t.equal(mine.byok, true);
  t.equal(own.embedCalls.length, 1);
  t.notOk("byok" in named);
});

t.test("listModels: each model's availability under its category, or the one asked for", async (t) => {
  const s = setup({}, { breaker: { consecutiveFailures: 1, halfOpenAfterMs: 60_000 } });
  const all = s.router.listModels();
  t.same(
    all.map((m) => [m.id, m.category, m.available]),
    [
      ["gpt-4.1-mini", "text", true],
      ["claude-haiku-4-5", "text", true],
      ["gemini-2.5-flash", "text", false],
      ["plain-chat", "text", true],
      ["oa-768", "embedding", true],
      ["co-1536", "embedding", true],
    ],
  );
  t.strictSame(all[0], { id: "gpt-4.1-mini", provider: "openai", category: "text", tier: "medium", available: true, capabilities: catalogue.get("gpt-4.1-mini")!.capabilities, pricing: catalogue.get("gpt-4.1-mini")!.pricing });
  const vision = s.router.listModels("vision");
  t.same(vision.map((m) => [m.id, m.category]), [["gpt-4.1-mini", "vision"], ["claude-haiku-4-5", "vision"], ["gemini-2.5-flash", "vision"]]);
  const chatOnly = new Router({ catalogue, adapters: new Map<string, ProviderAdapter>([["openai", { provider: "openai", chat: s.openai.chat.bind(s.openai) }]]), timeoutMs: 1_000, maxAttempts: 1 });
  t.same(chatOnly.listModels("embedding").map((m) => m.available), [false, false], "an adapter that cannot embed serves no embedding model");
  t.equal(chatOnly.listModels("text")[0]?.available, true);
  t.same(chatOnly.listModels().filter((m) => m.category === "embedding").map((m) => m.available), [false, false], "also listed without a category");
  t.equal(s.router.isAvailable("openai"), true);
  t.equal(s.router.isAvailable("gemini"), false, "not configured");
});

t.test("an open breaker: the provider is unavailable, in the listing and the breaker states", async (t) => {
  const s = setup({ openai: [[http("openai", 503)]] }, { breaker: { consecutiveFailures: 1, halfOpenAfterMs: 60_000 } });
  await drain(s.router.chatStream(mini));
  t.equal(s.router.isAvailable("openai"), false);
  t.equal(s.router.listModels("text")[0]?.available, false);
  t.same(s.router.breakerStates(), [
    { provider: "openai", state: "open" },
    { provider: "anthropic", state: "closed" },
  ]);
  t.same(s.router.consoleBreakerRows(), s.router.breakerStates(), "no deployments: the providers' rows only");
  t.same(s.router.deploymentReadings(), []);
});

t.test("a pool of deployments: its own view and readings, one row per deployment, no provider breaker", async (t) => {
  const east = new StreamingDouble("openai", [[http("openai", 503)], [http("openai", 503)]]);
  const spec = deploymentSpecSchema.parse({ name: "east", provider: "openai", api_key: "k", region: "eu" });
  const breaker = { consecutiveFailures: 1, halfOpenAfterMs: 60_000 };
  const pool = new DeploymentPool("openai", [{ spec, adapter: east }], breakerOptionsOf(breaker));
  const anthropic = new StreamingDouble("anthropic", [[http("anthropic", 401)]]);
  const seen: string[] = [];
  const observer: AttemptObserver = {
    attempt(provider) {
      seen.push(provider);
      return (outcome) => seen.push(outcome);
    },
  };
  const adapters = new Map<string, ProviderAdapter>([["openai", pool], ["anthropic", anthropic]]);
  const r = new Router({ catalogue, adapters, timeoutMs: 2_000, maxAttempts: 3, breaker: { consecutiveFailures: 1, halfOpenAfterMs: 60_000 }, backoff: { initialDelayMs: 1, maxDelayMs: 1 }, random: () => 1, observer });
  t.equal(r.viewOf("openai").accepting, true);
  const { events, error } = await drain(r.chatStream(mini));
  t.same(events, []);
  t.match(troupeErrorOf(error).details, { provider: "anthropic", upstream_status: 401, attempts: 2 });
  t.same(seen, ["openai", "error", "anthropic", "error"], "the pool's open deployment keeps openai out of the retry round (anthropic's 401 is not retried)");
  t.equal(east.calls.length, 1);
  t.equal(r.viewOf("openai").accepting, false, "the pool's view: its one deployment is open");
  t.equal(r.isAvailable("openai"), false);
  t.equal(r.healthOf("openai").state, "closed", "the provider's own breaker is not used for a pool");
  t.equal(r.healthOf("anthropic").state, "closed");
  t.same(r.deploymentReadings().map((d) => [d.provider, d.deployment, d.region, d.state, d.calls, d.errors]), [["openai", "east", "eu", "open", 1, 1]]);
  t.same(r.consoleBreakerRows(), [
    { provider: "openai", state: "open" },
    { provider: "anthropic", state: "closed" },
    { provider: "openai/east", state: "open" },
  ]);
});

t.test("close closes every adapter", async (t) => {
  const s = setup();
  await s.router.close();
  t.equal(s.openai.closed, 1);
  t.equal(s.anthropic.closed, 1);
});

t.test("close closes the deployments' replaced adapters too", async (t) => {
  const shorthand = new StreamingDouble("openai");
  const current = new StreamingDouble("openai");
  const adapters = new Map<string, ProviderAdapter>([["openai", shorthand]]);
  const deployments = new Deployments({ path: "/nonexistent/deployments.json", settings: {}, adapters, breaker: breakerOptionsOf() });
  // As installing a deployments file does: the provider's own adapter is replaced in the router's map.
  adapters.set("openai", current);
  const r = new Router({ catalogue, adapters, timeoutMs: 1_000, maxAttempts: 1, deployments });
  t.equal(r.deployments, deployments);
  await r.close();
  t.equal(shorthand.closed, 1, "closed by the deployments");
  t.equal(current.closed, 1);
});

t.test("a routed call's request deadline is disposed with it; adapters without close() are skipped", async (t) => {
  const s = setup({}, { timeoutMs: 300 });
  await s.router.chat(mini);
  await delay(600);
  t.equal(s.openai.chatCalls[0]?.signal.aborted, false, "the answered call's signal is not aborted by a deadline left running");
  const r = new Router({ catalogue, adapters: new Map<string, ProviderAdapter>([["openai", s.openai], ["gemini", { provider: "gemini" }]]), timeoutMs: 1_000, maxAttempts: 1 });
  await r.close();
  t.equal(s.openai.closed, 1);
});
