// A video job's request, its narration and its composition limiter, in
// process (actors/job/video-request.ts, narration.ts, compose-limit.ts).
// What it pins:
// - the request's limits at the edge and one past it: prompt 1..4000
//   non-blank characters, duration 1..20 whole seconds (default 5),
//   narration 1..4096 non-blank characters or null (default), 1..10 scenes
//   or null (default); the route's body adds image_url (http/https, at most
//   8192 characters, default null), model (default null) and
//   routing_strategy (default "auto") and refuses unknown fields, while the
//   tool's arguments drop them; the tool's name, description and the
//   descriptions its JSON Schema publishes;
// - segmentPrompts: one segment per scene, else the prompt (no scenes or
//   an empty list);
// - the narrator: the configured model and voice as they are; a voice with
//   no model routes (model null); no voice takes the planned speech model's
//   first voice and its id, under a configured model that model's voice;
//   no speech model is 503 no_provider_available with its message; the
//   caller's signal reaches the provider;
// - the limiter: never more than its slots at once, FIFO, a failure frees
//   its slot; at least one slot whatever is asked; the default is the
//   machine's parallelism.
// Fast on purpose: the mutation run runs this file once per mutant.
import { availableParallelism } from "node:os";
import t from "tap";
import { createLimiter } from "../../actors/job/compose-limit.ts";
import { narrator } from "../../actors/job/narration.ts";
import {
  DEFAULT_SEGMENT_SECONDS,
  generateVideoArgs,
  generateVideoTool,
  MAX_NARRATION_CHARS,
  MAX_PROMPT_CHARS,
  MAX_SCENES,
  MAX_SEGMENT_SECONDS,
  MIN_SEGMENT_SECONDS,
  segmentPrompts,
  videoGenerateBody,
} from "../../actors/job/video-request.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import type { SpeechRequest } from "../../providers/media-types.ts";
import { Router } from "../../providers/router.ts";
import type { ProviderAdapter } from "../../providers/types.ts";
import { rejectedWith } from "../support/thrown-by.ts";

t.test("the limits' values", async (t) => {
  t.same([MAX_SCENES, MIN_SEGMENT_SECONDS, MAX_SEGMENT_SECONDS, DEFAULT_SEGMENT_SECONDS, MAX_NARRATION_CHARS, MAX_PROMPT_CHARS], [10, 1, 20, 5, 4096, 4000]);
});

t.test("the route's body: defaults, and each limit at the edge and one past it", async (t) => {
  const ok = (body: Record<string, unknown>) => videoGenerateBody.safeParse(body).success;
  t.same(videoGenerateBody.parse({ prompt: "a cat" }), {
    prompt: "a cat",
    duration_seconds: 5,
    narration_text: null,
    scenes: null,
    image_url: null,
    model: null,
    routing_strategy: "auto",
  });
  t.ok(ok({ prompt: "x" }), "one character");
  t.notOk(ok({ prompt: "" }), "empty prompt");
  t.notOk(ok({ prompt: "   " }), "blank prompt");
  t.ok(ok({ prompt: "p".repeat(4000) }), "4000 characters");
  t.notOk(ok({ prompt: "p".repeat(4001) }), "4001 characters");
  t.ok(ok({ prompt: "x", duration_seconds: 1 }));
  t.notOk(ok({ prompt: "x", duration_seconds: 0 }));
  t.ok(ok({ prompt: "x", duration_seconds: 20 }));
  t.notOk(ok({ prompt: "x", duration_seconds: 21 }));
  t.notOk(ok({ prompt: "x", duration_seconds: 2.5 }), "whole seconds");
  t.ok(ok({ prompt: "x", narration_text: "n" }));
  t.ok(ok({ prompt: "x", narration_text: null }));
  t.notOk(ok({ prompt: "x", narration_text: "" }));
  t.notOk(ok({ prompt: "x", narration_text: " \n " }), "blank narration");
  t.ok(ok({ prompt: "x", narration_text: "n".repeat(4096) }));
  t.notOk(ok({ prompt: "x", narration_text: "n".repeat(4097) }));
  t.ok(ok({ prompt: "x", scenes: ["a"] }));
  t.notOk(ok({ prompt: "x", scenes: [] }), "no scenes");
  t.ok(ok({ prompt: "x", scenes: Array.from({ length: 10 }, (_, i) => `s${i}`) }));
  t.notOk(ok({ prompt: "x", scenes: Array.from({ length: 11 }, (_, i) => `s${i}`) }));
  t.notOk(ok({ prompt: "x", scenes: ["a", " "] }), "a blank scene");
  t.notOk(ok({ prompt: "x", scenes: ["s".repeat(4001)] }), "a scene is a prompt");
  t.ok(ok({ prompt: "x", image_url: "https://img.example/a.png" }));
  t.ok(ok({ prompt: "x", image_url: "http://img.example/a.png" }));
  t.notOk(ok({ prompt: "x", image_url: "ftp://img.example/a.png" }), "not http(s)");
  t.notOk(ok({ prompt: "x", image_url: "xhttps://img.example/a.png" }), "the protocol whole");
  t.notOk(ok({ prompt: "x", image_url: "httpsx://img.example/a.png" }), "the protocol whole");
  const base = "https://img.example/";
  t.ok(ok({ prompt: "x", image_url: base + "a".repeat(8192 - base.length) }), "8192 characters");
  t.notOk(ok({ prompt: "x", image_url: base + "a".repeat(8193 - base.length) }), "8193 characters");
  t.same(videoGenerateBody.parse({ prompt: "x", model: "m", routing_strategy: "cost" }).model, "m");
  t.notOk(ok({ prompt: "x", routing_strategy: "bogus" }));
  t.notOk(ok({ prompt: "x", extra: 1 }), "unknown fields refused");
});

t.test("the tool's arguments: the same fields, unknown ones dropped, and what the model is told", async (t) => {
  t.same(generateVideoArgs.parse({ prompt: "a cat", extra: 1 }), { prompt: "a cat", duration_seconds: 5, narration_text: null, scenes: null });
  t.notOk(generateVideoArgs.safeParse({ prompt: "x", duration_seconds: 21 }).success);
  t.equal(generateVideoTool.name, "generate_video");
  t.equal(
    generateVideoTool.description,
    "Generate a short video. Runs asynchronously: the conversation waits in generating_media until the video is ready, then you receive its URL (or the error).",
  );
  const properties = (generateVideoTool.parameters as { properties: Record<string, { description?: string }> }).properties;
  t.same(
    Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, v.description])),
    {
      prompt: "Visual description of the video",
      duration_seconds: "Seconds per scene",
      narration_text: "Spoken voiceover, synthesized and mixed in",
      scenes: "One visual description per scene, in order",
    },
  );
});

t.test("segmentPrompts: the scenes, else the prompt", async (t) => {
  t.same(segmentPrompts({ prompt: "p", scenes: ["a", "b"] }), ["a", "b"]);
  t.same(segmentPrompts({ prompt: "p", scenes: null }), ["p"]);
  t.same(segmentPrompts({ prompt: "p", scenes: [] }), ["p"]);
});

const catalogue = Catalogue.load();

/** A router whose providers' speech records each request and the signal it came with. */
function speechRouter(providers: string[]) {
  const asked: { provider: string; req: SpeechRequest; signal: AbortSignal | undefined }[] = [];
  const adapters = new Map<string, ProviderAdapter>(
    providers.map((provider) => [
      provider,
      {
        provider,
        speech: async (req: SpeechRequest, opts: { signal?: AbortSignal }) => {
          asked.push({ provider, req, signal: opts.signal });
          return { bytes: Buffer.from(`${provider}:${req.voice}`), contentType: "audio/mpeg" };
        },
      },
    ]),
  );
  const router = new RecordingRouter({ catalogue, adapters, timeoutMs: 2_000, maxAttempts: 1, backoff: { initialDelayMs: 1, maxDelayMs: 1 }, random: () => 1 });
  return { router, asked, plans: router.plans };
}

/** A router that keeps the model and strategy of each plan it is asked for. */
class RecordingRouter extends Router {
  readonly plans: [string | null | undefined, string][] = [];
  override plan(...args: Parameters<Router["plan"]>): ReturnType<Router["plan"]> {
    this.plans.push([args[0], args[1]]);
    return super.plan(...args);
  }
}

t.test("the narrator: the configured model and voice", async (t) => {
  const { router, asked } = speechRouter(["openai", "simulated"]);
  const signal = new AbortController().signal;
  const out = await narrator(router, { narrationModel: "tts-1-hd", narrationVoice: "nova" })("héllo", signal);
  t.same({ model: out.model, provider: out.provider, characters: out.characters, audio: out.audio.bytes.toString() }, { model: "tts-1-hd", provider: "openai", characters: 5, audio: "openai:nova" });
  t.equal(asked.length, 1);
  t.same(asked[0]?.req, { model: "tts-1-hd", voice: "nova", text: "héllo" });
  t.ok(asked[0]?.signal, "a signal reaches the provider");
  const aborted = new AbortController();
  aborted.abort();
  await narrator(router, { narrationModel: "tts-1-hd", narrationVoice: "nova" })("again", aborted.signal).catch(() => undefined);
  t.equal(asked[1]?.signal?.aborted, true, "the caller's abort reaches the provider's call");
  t.equal(asked[0]?.signal?.aborted, false, "a call not aborted is not");
});

t.test("the narrator: a voice and no model routes among the models with that voice", async (t) => {
  const { router, asked, plans } = speechRouter(["openai", "simulated"]);
  const out = await narrator(router, { narrationModel: undefined, narrationVoice: "bass" })("hi", new AbortController().signal);
  t.equal(out.model, "simulated-speech", "only the simulated model has the voice bass");
  t.same(plans, [[null, "auto"]], "one plan: no model, the auto strategy");
  t.same(asked.map((a) => a.req.voice), ["bass"]);
});

t.test("the narrator: no voice takes the planned model's first voice and that model", async (t) => {
  const { router, asked, plans } = speechRouter(["simulated"]);
  const out = await narrator(router, { narrationModel: undefined, narrationVoice: undefined })("hi", new AbortController().signal);
  t.same({ model: out.model, voice: asked[0]?.req.voice }, { model: "simulated-speech", voice: "alto" });
  t.same(plans, [[null, "auto"], ["simulated-speech", "auto"]], "routed to pick the model, then that model asked for");
  const empty = await narrator(router, { narrationModel: undefined, narrationVoice: "" })("hi", new AbortController().signal);
  t.equal(empty.model, "simulated-speech", "an empty voice is no voice");
  t.equal(asked[1]?.req.voice, "alto");
});

t.test("the narrator: a configured model and no voice takes that model's first voice", async (t) => {
  const { router, asked } = speechRouter(["openai", "elevenlabs", "simulated"]);
  const out = await narrator(router, { narrationModel: "eleven_flash_v2_5", narrationVoice: undefined })("hi", new AbortController().signal);
  t.same({ model: out.model, provider: out.provider, voice: asked[0]?.req.voice, upstream: asked[0]?.req.model }, {
    model: "eleven_flash_v2_5",
    provider: "elevenlabs",
    voice: "rachel",
    upstream: "eleven_flash_v2_5",
  });
});

/** A router whose plan finds no speech model (the real one refuses first with a 400; the narrator's own check stands behind it). */
class NoSpeechRouter extends Router {
  override plan(): ReturnType<Router["plan"]> {
    return [];
  }
}

/** A router whose plan finds a model without voices (a chat model): the narrator still refuses, not a TypeError. */
class VoicelessRouter extends Router {
  override plan(): ReturnType<Router["plan"]> {
    const chat = catalogue.get("gpt-4.1-mini");
    return chat ? [chat] : [];
  }
}

t.test("the narrator: a planned model without voices is no_provider_available", async (t) => {
  const router = new VoicelessRouter({ catalogue, adapters: new Map(), timeoutMs: 2_000, maxAttempts: 1 });
  const error = await rejectedWith(narrator(router, { narrationModel: undefined, narrationVoice: undefined })("hi", new AbortController().signal));
  t.equal(error.code, "no_provider_available");
});

t.test("the narrator: no speech model is no_provider_available", async (t) => {
  const router = new NoSpeechRouter({ catalogue, adapters: new Map(), timeoutMs: 2_000, maxAttempts: 1 });
  const error = await rejectedWith(narrator(router, { narrationModel: undefined, narrationVoice: undefined })("hi", new AbortController().signal));
  t.same({ code: error.code, message: error.message, status: error.status }, { code: "no_provider_available", message: "no speech model is available for the narration", status: 503 });
});

/** A limiter's run of `n` works that each wait for the test to release them: who started, in order. */
function gatedRun(limit: ReturnType<typeof createLimiter>, n: number, failing: number | null = null) {
  const started: number[] = [];
  const gates: (() => void)[] = [];
  const results = Array.from({ length: n }, (_, i) =>
    limit(async () => {
      started.push(i);
      await new Promise<void>((resolve) => gates.push(resolve));
      if (i === failing) throw new Error(`work ${i} failed`);
      return i;
    }),
  );
  // Settled as they end, so a failing work is never an unhandled rejection.
  return { started, gates, results, settled: Promise.allSettled(results) };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

t.test("the limiter: at most its slots at once, FIFO, a failure frees its slot", async (t) => {
  const limit = createLimiter(2);
  const { started, gates, settled: allSettled } = gatedRun(limit, 5, 0);
  await settle();
  t.same(started, [0, 1], "two at once");
  gates.shift()?.(); // 0 fails
  await settle();
  t.same(started, [0, 1, 2], "the failure's slot goes to the first waiting");
  gates.shift()?.(); // 1
  await settle();
  t.same(started, [0, 1, 2, 3]);
  gates.shift()?.(); // 2
  gates.shift()?.(); // 3
  await settle();
  t.same(started, [0, 1, 2, 3, 4]);
  gates.shift()?.(); // 4
  const settled = await allSettled;
  t.same(settled.map((r) => r.status), ["rejected", "fulfilled", "fulfilled", "fulfilled", "fulfilled"]);
  t.same(settled.map((r) => (r.status === "fulfilled" ? r.value : null)), [null, 1, 2, 3, 4]);
  // Both slots came back: two more run at once, a third waits.
  const again = gatedRun(limit, 3);
  await settle();
  t.same(again.started, [0, 1], "two slots again, not more");
  for (let i = 0; i < 3; i++) {
    again.gates.shift()?.();
    await settle();
  }
  again.gates.shift()?.();
  t.same(await Promise.all(again.results), [0, 1, 2]);
});

t.test("the limiter: at least one slot, and the machine's parallelism by default", async (t) => {
  for (const slots of [0, -3]) {
    const run = gatedRun(createLimiter(slots), 2);
    await settle();
    t.same(run.started, [0], `${slots} slots run one at a time`);
    run.gates.shift()?.();
    await settle();
    t.same(run.started, [0, 1]);
    run.gates.shift()?.();
    await Promise.all(run.results);
  }
  const n = availableParallelism();
  const run = gatedRun(createLimiter(), n + 1);
  await settle();
  t.equal(run.started.length, n, "as many as the machine's parallelism");
  run.gates.shift()?.();
  await settle();
  t.equal(run.started.length, n + 1);
  while (run.gates.length > 0) run.gates.shift()?.();
  await Promise.all(run.results);
});
