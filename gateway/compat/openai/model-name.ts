// What an OpenAI client's `model` means here: any catalogue id (an
// Anthropic or Gemini model through the OpenAI SDK is the point), or one of
// the `troupe/<strategy>` names that leave the choice to Troupe's routing
// (`troupe/auto` = model null, routing_strategy auto, for the endpoint's
// category). An id the catalogue does not know is OpenAI's 404
// `model_not_found`; a known model of the wrong kind is a 400 naming `model`.
import { z } from "zod";
import { TroupeError } from "../../../core/errors.ts";
import { capabilityProblem, type Catalogue, type Need } from "../../../providers/catalogue.ts";
import type { RoutingStrategy } from "../../../providers/types.ts";
import type { OpenAiErrorDetails } from "./errors.ts";

/** The routing names OpenAI clients can put in `model` (listed by GET /openai/v1/models). */
export const routingModelNames = { "troupe/auto": "auto", "troupe/cost": "cost", "troupe/latency": "latency" } as const satisfies Record<string, RoutingStrategy>;

export interface RoutedModel {
  model: string | null;
  routing_strategy: RoutingStrategy;
}

export function isRoutingName(name: string): name is keyof typeof routingModelNames {
  return Object.hasOwn(routingModelNames, name);
}

/**
 * Resolves `model` for a request needing `need`. A named model keeps
 * Troupe's default routing (`auto`: that model first, equivalents on other
 * providers if it fails), unless the body's `routing_strategy` extension says
 * otherwise.
 */
export function resolveModel(catalogue: Catalogue, name: string, need: Need, strategy: RoutingStrategy | undefined): RoutedModel {
  if (isRoutingName(name)) {
    if (strategy === "manual") throw new TroupeError("invalid_request", `routing_strategy manual needs a catalogue model, not ${name}`, { details: [{ path: "routing_strategy", message: "manual needs a model" }] });
    return { model: null, routing_strategy: strategy ?? routingModelNames[name] };
  }
  const entry = catalogue.get(name);
  if (!entry) {
    const details: OpenAiErrorDetails = { openai_code: "model_not_found", param: "model" };
    throw new TroupeError("not_found", `The model \`${name}\` does not exist (GET /openai/v1/models lists the models; troupe/auto lets Troupe choose)`, { details });
  }
  const problem = capabilityProblem(entry, need);
  if (problem) throw new TroupeError("invalid_request", problem, { details: [{ path: "model", message: problem }] });
  return { model: entry.id, routing_strategy: strategy ?? "auto" };
}

/**
 * `model` as the body schema takes it: any string (an unknown id is a 404
 * `model_not_found` and a model of the wrong kind a 400, as OpenAI answers),
 * documented as an enum of what serves: the routing names and the catalogue
 * ids that can serve the endpoint's category.
 */
export function modelNameSchema(catalogue: Catalogue, need: Need) {
  const ids = [...Object.keys(routingModelNames), ...catalogue.models.filter((m) => capabilityProblem(m, need) === undefined).map((m) => m.id)];
  return z.string().min(1).meta({ enum: ids, description: "a catalogue model (GET /openai/v1/models) or troupe/auto, troupe/cost, troupe/latency" });
}
