// What the router and the jobs route need to route one video segment:
// which models can make it (an image to animate needs image_input, a text
// segment needs a model that does not require an image), which clip length
// a model makes for a requested duration, and the `model` schema of the
// video route (an enum of the catalogue's video model ids).
import { invalidRequest } from "../core/errors.ts";
import { modelIdSchema, type Catalogue, type ModelEntry, type Need } from "./catalogue.ts";

/** Why the model cannot make this segment, or undefined when it can. */
export function videoSegmentProblem(m: ModelEntry, withImage: boolean): string | undefined {
  const input = m.capabilities.image_input ?? "none";
  if (withImage && input === "none") return `model ${m.id} cannot start a clip from an image`;
  if (!withImage && input === "required") return `model ${m.id} only animates an image (image_to_video); give an image or use another model`;
  if ((m.capabilities.durations ?? []).length === 0) return `model ${m.id} lists no clip durations`;
  return undefined;
}

/** The router's Need for a segment with or without an image. */
export function videoNeed(withImage: boolean): Need {
  return { category: "video", media: (m) => videoSegmentProblem(m, withImage) };
}

/** The model's clip length closest to `seconds` (ties go to the longer clip, so a scene is never shortened needlessly). */
export function nearestDuration(m: ModelEntry, seconds: number): number {
  const offered = m.capabilities.durations ?? [];
  if (offered.length === 0) throw new Error(`model ${m.id} lists no clip durations`);
  return offered.reduce((best, d) => {
    const gap = Math.abs(d - seconds) - Math.abs(best - seconds);
    return gap < 0 || (gap === 0 && d > best) ? d : best;
  });
}

/** Whether the model makes clips of exactly `seconds`. */
export function offersDuration(m: ModelEntry, seconds: number): boolean {
  return (m.capabilities.durations ?? []).includes(seconds);
}

/** Whether the model can start a clip from an image. */
export function takesImage(m: ModelEntry): boolean {
  return (m.capabilities.image_input ?? "none") !== "none";
}

/** The longest clip any model of the catalogue makes (bounds a scene's duration in route schemas). */
export function longestClipSeconds(catalogue: Catalogue): number {
  return Math.max(0, ...catalogue.ofCategory("video").flatMap((m) => m.capabilities.durations ?? []));
}

/**
 * `model` of a video request: an enum of the video model ids (unknown and
 * non-video ids refused by the schema, with the catalogue's reason). Pass
 * `withImage` to also refuse models that cannot make that kind of segment.
 */
export function videoModelIdSchema(catalogue: Catalogue, withImage?: boolean) {
  const need: Need = withImage === undefined ? { category: "video" } : videoNeed(withImage);
  return modelIdSchema(catalogue, need);
}

/** A 400 naming `path` when the named model cannot make the segment; for checks the schema cannot make (image given or not). */
export function assertVideoModelFits(catalogue: Catalogue, model: string, withImage: boolean, path = "body.model"): void {
  const entry = catalogue.get(model);
  const problem = entry ? videoSegmentProblem(entry, withImage) : `unknown model ${model}`;
  if (problem) throw invalidRequest([{ path, message: problem }]);
}
