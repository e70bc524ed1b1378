// A video job's budget parts (actors/job/job-budget.ts) in process, with a
// recording planner double and catalogue entries made here. What it pins:
// - the held part and job budget shapes: what they accept and refuse;
// - jobPartsNanos: one part per segment at the dearest model the segment
//   may be routed to (the request's model, strategy and video need asked of
//   the planner), priced at the clip length that model makes, in whole
//   nano-dollars; then the narration's, at the dearest speech model for its
//   characters (code points, not UTF-16 units), asked of the planner with
//   the configured speech model (null when none) and "auto"; no speech model
//   at all holds 0 for it; no narration, no part for it;
// - partFor / partsFor: the project's and the key's reservations of a part
//   still open, none of a closed, missing or budgetless one;
// - closePart and openParts.
// Fast on purpose: the mutation run runs this file once per mutant.
import t from "tap";
import { closePart, heldPartSchema, jobBudgetSchema, jobPartsNanos, openParts, partFor, partsFor, type JobBudgetState, type JobShape, type Planner } from "../../actors/job/job-budget.ts";
import { modelEntrySchema, type ModelEntry, type Need } from "../../providers/catalogue.ts";
import { speaks } from "../../providers/speech.ts";
import type { RoutingStrategy } from "../../providers/types.ts";

const video = (id: string, usdPerSecond: number, durations: number[]): ModelEntry =>
  modelEntrySchema.parse({ id, provider: "p", category: "video", tier: "medium", capabilities: { durations }, pricing: { unit: "second", usd_per_unit: usdPerSecond } });
const speech = (id: string, usdPerChar: number): ModelEntry =>
  modelEntrySchema.parse({ id, provider: "p", category: "audio", tier: "medium", capabilities: { voices: ["v"] }, pricing: { unit: "character", usd_per_unit: usdPerChar } });

interface Asked {
  model: string | null | undefined;
  strategy: RoutingStrategy;
  need: Need;
}

/** Answers video and audio plans from the lists given; a list that is an Error is thrown. */
function planner(videos: ModelEntry[], speakers: ModelEntry[] | Error): Planner & { asked: Asked[] } {
  const asked: Asked[] = [];
  return {
    asked,
    plan: (model, strategy, need) => {
      asked.push({ model, strategy, need });
      if (need.category === "video") return videos;
      if (speakers instanceof Error) throw speakers;
      return speakers;
    },
  };
}

const shape = (over: Partial<JobShape> = {}): JobShape => ({ model: "asked", routing_strategy: "cost", duration_seconds: 4, withImage: false, segments: 2, narration_text: null, ...over });

t.test("the held part and job budget shapes", async (t) => {
  t.same(heldPartSchema.parse({ id: "p0", amount_nanos: 0, open: true }), { id: "p0", amount_nanos: 0, open: true });
  t.notOk(heldPartSchema.safeParse({ id: "p0", amount_nanos: -1, open: true }).success, "a negative amount is refused");
  t.notOk(heldPartSchema.safeParse({ id: "p0", amount_nanos: 1.5, open: true }).success, "a fractional amount is refused");
  t.notOk(heldPartSchema.safeParse({ id: "p0", amount_nanos: 1 }).success, "open is required");
  t.notOk(heldPartSchema.safeParse({ amount_nanos: 1, open: true }).success, "id is required");
  const full = { project_id: "proj", period: "2026-12", parts: [{ id: "p0", amount_nanos: 5, open: false }], api_key_id: "key", project: false };
  t.same(jobBudgetSchema.parse(full), full);
  t.same(jobBudgetSchema.parse({ project_id: "proj", period: "2026-12", parts: [] }), { project_id: "proj", period: "2026-12", parts: [] }, "the key and project flags are optional");
  t.notOk(jobBudgetSchema.safeParse({ period: "2026-12", parts: [] }).success, "project_id is required");
  t.notOk(jobBudgetSchema.safeParse({ project_id: "proj", parts: [] }).success, "period is required");
  t.notOk(jobBudgetSchema.safeParse({ project_id: "proj", period: "2026-12" }).success, "parts are required");
  t.notOk(jobBudgetSchema.safeParse({ project_id: "proj", period: "2026-12", parts: [{ id: "p0", amount_nanos: -1, open: true }] }).success, "each part is checked");
  t.notOk(jobBudgetSchema.safeParse({ ...full, api_key_id: 7 }).success, "api_key_id is a string");
  t.notOk(jobBudgetSchema.safeParse({ ...full, project: "no" }).success, "project is a boolean");
});

t.test("jobPartsNanos: each segment at the dearest routable model, at the clip length it makes", async (t) => {
  // cheap: 4 s at $0.01 = $0.04; dear: its nearest length to 4 s is 5 s (ties and all), 5 × $0.02 = $0.10.
  const router = planner([video("cheap", 0.01, [4, 8]), video("dear", 0.02, [3, 5]), video("free", 0, [4])], []);
  t.same(jobPartsNanos(router, "tts", shape()), [100_000_000, 100_000_000], "one part per segment, none for a job without narration");
  t.equal(router.asked.length, 1, "the speech models are not asked for without narration");
  const asked = router.asked[0]!;
  t.equal(asked.model, "asked");
  t.equal(asked.strategy, "cost");
  t.equal(asked.need.category, "video");
  t.equal(asked.need.media?.(video("noimage", 1, [4])), undefined, "the video need of a text job accepts a video model");

  const withImage = planner([video("v", 0.01, [4])], []);
  jobPartsNanos(withImage, undefined, shape({ withImage: true, model: null, routing_strategy: "auto", segments: 1 }));
  t.equal(withImage.asked[0]!.model, null);
  t.equal(withImage.asked[0]!.strategy, "auto");
  const imageless = modelEntrySchema.parse({ id: "noimg", provider: "p", category: "video", tier: "medium", capabilities: { durations: [4], image_input: "none" }, pricing: { unit: "second", usd_per_unit: 1 } });
  t.type(withImage.asked[0]!.need.media?.(imageless), "string", "an image job's need refuses a model that takes no image");

  t.same(jobPartsNanos(planner([video("v", 0.01, [4])], []), undefined, shape({ segments: 3 })), [40_000_000, 40_000_000, 40_000_000]);
  t.same(jobPartsNanos(planner([video("v", 0.01, [4])], []), undefined, shape({ segments: 0 })), [], "no segment, no part");
  t.same(jobPartsNanos(planner([], []), undefined, shape({ segments: 1 })), [0], "no model to price: nothing held");
  // $1.5e-8 is 14.999… nano-dollars in floating point: the part is whole nano-dollars.
  t.same(jobPartsNanos(planner([video("v", 1.5e-8, [1])], []), undefined, shape({ segments: 1, duration_seconds: 1 })), [15]);
});

t.test("jobPartsNanos: the narration's part, at the dearest speech model for its code points", async (t) => {
  const router = planner([video("v", 0.01, [4])], [speech("tts-a", 0.001), speech("tts-b", 0.003), speech("tts-c", 0.002)]);
  // "ab😀" is 3 code points (4 UTF-16 units): 3 × $0.003.
  t.same(jobPartsNanos(router, "tts-b", shape({ segments: 1, narration_text: "ab😀" })), [40_000_000, 9_000_000]);
  t.equal(router.asked.length, 2);
  const asked = router.asked[1]!;
  t.equal(asked.model, "tts-b", "the configured speech model");
  t.equal(asked.strategy, "auto");
  t.equal(asked.need.category, "audio");
  t.equal(asked.need.media, speaks, "held to models that speak");

  const unnamed = planner([video("v", 0.01, [4])], [speech("tts", 1.5e-8)]);
  t.same(jobPartsNanos(unnamed, undefined, shape({ segments: 1, narration_text: "x" })), [40_000_000, 15], "whole nano-dollars");
  t.equal(unnamed.asked[1]!.model, null, "no configured speech model: null, the router's choice");

  const mute = planner([video("v", 0.01, [4])], new Error("no speech model"));
  t.same(jobPartsNanos(mute, "tts", shape({ segments: 2, narration_text: "hello" })), [40_000_000, 40_000_000, 0], "no speech model: the narration holds nothing");
  t.same(jobPartsNanos(planner([video("v", 0.01, [4])], []), "tts", shape({ segments: 1, narration_text: "" })), [40_000_000, 0], "an empty narration still has its part");
});

const budget = (over: Partial<JobBudgetState> = {}): JobBudgetState => ({
  project_id: "proj",
  period: "2026-12",
  parts: [
    { id: "job:j:0", amount_nanos: 10, open: true },
    { id: "job:j:1", amount_nanos: 20, open: false },
    { id: "job:j:2", amount_nanos: 30, open: true },
  ],
  ...over,
});

t.test("partFor: the project's reservation of a part still open", async (t) => {
  t.same(partFor(budget(), 0), { project_id: "proj", period: "2026-12", id: "job:j:0" });
  t.same(partFor(budget({ api_key_id: "key", project: false }), 2), { project_id: "proj", period: "2026-12", id: "job:j:2" });
  t.equal(partFor(budget(), 1), undefined, "a closed part");
  t.equal(partFor(budget(), 3), undefined, "no such part");
  t.equal(partFor(null, 0), undefined, "no budget");
});

t.test("partsFor: the project's part, the key's, or both", async (t) => {
  t.same(partsFor(budget(), 0), [{ project_id: "proj", period: "2026-12", id: "job:j:0" }], "older states: the project's only");
  t.same(partsFor(budget({ project: true }), 2), [{ project_id: "proj", period: "2026-12", id: "job:j:2" }]);
  t.same(partsFor(budget({ api_key_id: "key" }), 0), [
    { project_id: "proj", period: "2026-12", id: "job:j:0" },
    { project_id: "proj", api_key_id: "key", period: "2026-12", id: "job:j:0" },
  ]);
  t.same(partsFor(budget({ api_key_id: "key", project: false }), 2), [{ project_id: "proj", api_key_id: "key", period: "2026-12", id: "job:j:2" }], "the key's only");
  t.same(partsFor(budget({ api_key_id: "" }), 0), [{ project_id: "proj", period: "2026-12", id: "job:j:0" }], "an empty key id holds nothing of a key");
  t.same(partsFor(budget({ project: false }), 0), [], "neither");
  t.same(partsFor(budget({ api_key_id: "key" }), 1), [], "a closed part");
  t.same(partsFor(budget(), 3), [], "no such part");
  t.same(partsFor(null, 0), [], "no budget");
});

t.test("closePart and openParts", async (t) => {
  const b = budget();
  t.same(openParts(b).map((p) => p.id), ["job:j:0", "job:j:2"]);
  closePart(b, 2);
  t.same(b.parts.map((p) => p.open), [true, false, false], "only that part closed");
  t.same(openParts(b), [{ id: "job:j:0", amount_nanos: 10, open: true }]);
  closePart(b, 1);
  t.same(b.parts.map((p) => p.open), [true, false, false], "closing a closed part keeps it closed");
  closePart(b, 9);
  closePart(null, 0);
  t.same(b.parts.map((p) => p.open), [true, false, false], "no such part, no budget: nothing changes");
  t.same(openParts(null), []);
});
