// What a video job is asked to make (docs/api/video-jobs.md), checked once for both ways
// of starting one: POST /v1/video/generate and an agent's `generate_video`
// tool call. Limits are ours where the interface contract is silent: a scene is
// one provider clip of a few seconds, so a few scenes make a short video.
import { z } from "zod";
import { text } from "../../core/text-schema.ts";
import { toolParameters } from "../../core/tool-parameters.ts";
import { routingStrategySchema } from "../../providers/types.ts";

/** Scenes per job: each is one provider call and one billed clip. */
export const MAX_SCENES = 10;
/** Seconds asked per segment; providers pick their nearest duration (a few seconds). */
export const MIN_SEGMENT_SECONDS = 1;
export const MAX_SEGMENT_SECONDS = 20;
export const DEFAULT_SEGMENT_SECONDS = 5;
/** One speech call: the providers' per-call limit (providers/speech.ts). */
export const MAX_NARRATION_CHARS = 4096;
export const MAX_PROMPT_CHARS = 4000;

const prompt = text({ min: 1, max: MAX_PROMPT_CHARS, nonBlank: true });

/** The fields a job is made of; the route adds image_url, model and routing. */
export const videoRequestFields = {
  prompt,
  duration_seconds: z.number().int().min(MIN_SEGMENT_SECONDS).max(MAX_SEGMENT_SECONDS).default(DEFAULT_SEGMENT_SECONDS),
  narration_text: text({ min: 1, max: MAX_NARRATION_CHARS, nonBlank: true }).nullable().default(null),
  scenes: z.array(prompt).min(1).max(MAX_SCENES).nullable().default(null),
};

/** POST /v1/video/generate's body, before `model` (an enum of the catalogue's video models) is added. */
export const videoGenerateBody = z
  .object({
    ...videoRequestFields,
    image_url: z.url({ protocol: /^https?$/ }).max(8192).nullable().default(null),
    model: z.string().nullable().default(null),
    routing_strategy: routingStrategySchema.default("auto"),
  })
  .strict();

/** The `generate_video` tool's arguments (docs/api/agents.md): the video fields an agent may set, described for the model. */
export const generateVideoArgs = z
  .object({
    prompt: videoRequestFields.prompt.describe("Visual description of the video"),
    duration_seconds: videoRequestFields.duration_seconds.describe("Seconds per scene"),
    narration_text: videoRequestFields.narration_text.describe("Spoken voiceover, synthesized and mixed in"),
    scenes: videoRequestFields.scenes.describe("One visual description per scene, in order"),
  })
  .strip();

/** The built-in tool as the model sees it: its parameters are generateVideoArgs' JSON Schema. */
export const generateVideoTool = {
  name: "generate_video",
  description:
    "Generate a short video. Runs asynchronously: the conversation waits in generating_media until the video is ready, then you receive its URL (or the error).",
  parameters: toolParameters(generateVideoArgs),
};

/** The segments to make: one per scene, else one from the prompt. */
export function segmentPrompts(request: { prompt: string; scenes: string[] | null }): string[] {
  return request.scenes && request.scenes.length > 0 ? request.scenes : [request.prompt];
}
