// A hand-written check of the common generateContent body, before the
// strict schema (schemas.ts) and the proto-JSON name pass (proto-json.ts),
// as compat/openai/chat-body-fast.ts does for /openai/v1: the two cost the
// /gemini mount ~10 µs of main-thread CPU a call more than /v1's body check
// (bench:chat showed /gemini's added p50 12.9 % over /v1's).
//
// Only a body whose every field is plainly valid takes the short path:
// `contents` of user and model turns whose parts are text parts only, an
// optional `systemInstruction` of text parts, and a `generationConfig` of
// temperature, topP, maxOutputTokens and seed, every name in lowerCamelCase.
// Anything else (tools, images, thinking, a snake_case name, an unknown
// field, a value the schema would refuse) answers undefined and goes through
// the schema, which also words every 400. The output equals the schema's,
// key order included: test/gateway/compat/gemini-body-fast.test.ts compares
// the two on generated bodies.
import { isPlainRecord } from "../../plain-body.ts";
import type { Content, GenerateContentBody, GenerationConfig } from "./schemas.ts";

/** The schema's limits (schemas.ts): turns per body, parts per turn. */
const maxContents = 10_000;
const maxParts = 4096;

const turnRoles: ReadonlySet<string> = new Set(["user", "model"]);
const inRange = (min: number, max: number) => (value: unknown) => typeof value === "number" && value >= min && value <= max;

/** generationConfig's plain fields in the schema's key order, each with its rule. */
const configChecks: readonly (readonly [keyof GenerationConfig, (value: unknown) => boolean])[] = [
  ["temperature", inRange(0, 2)],
  ["topP", inRange(0, 1)],
  ["maxOutputTokens", (value) => Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 1_000_000],
  ["seed", (value) => Number.isInteger(value)],
];
const configKeys: ReadonlySet<string> = new Set(configChecks.map(([key]) => key));

/** Text parts only (`{text}` and nothing else), as the schema outputs them. */
function textParts(value: unknown): Content["parts"] | undefined {
  if (!Array.isArray(value) || value.length > maxParts) return undefined;
  const parts: Content["parts"] = [];
  for (const part of value as unknown[]) {
    if (!isPlainRecord(part)) return undefined;
    const keys = Object.keys(part);
    if (keys.length !== 1 || typeof part["text"] !== "string") return undefined;
    parts.push({ text: part["text"] });
  }
  return parts;
}

/** A turn of text parts, with a user or model role or none (the schema's key order: role, parts). */
function textContent(value: unknown, roles: ReadonlySet<string>): Content | undefined {
  if (!isPlainRecord(value)) return undefined;
  for (const key of Object.keys(value)) if (key !== "role" && key !== "parts") return undefined;
  const role = value["role"];
  if (role !== undefined && (typeof role !== "string" || !roles.has(role))) return undefined;
  const parts = textParts(value["parts"]);
  if (!parts) return undefined;
  return role === undefined ? { parts } : { role: role as Content["role"], parts };
}

function plainConfig(value: unknown): GenerationConfig | undefined {
  if (!isPlainRecord(value)) return undefined;
  for (const key of Object.keys(value)) if (!configKeys.has(key)) return undefined;
  const config: Record<string, unknown> = {};
  for (const [key, check] of configChecks) {
    if (!(key in value)) continue;
    if (!check(value[key])) return undefined;
    config[key] = value[key];
  }
  return config as GenerationConfig;
}

/** The parsed body when it is in the common form, else undefined (the schema decides). */
export function plainGenerateContentBody(value: unknown): GenerateContentBody | undefined {
  if (!isPlainRecord(value)) return undefined;
  for (const key of Object.keys(value)) if (key !== "contents" && key !== "systemInstruction" && key !== "generationConfig") return undefined;
  const raw = value["contents"];
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > maxContents) return undefined;
  const contents: Content[] = [];
  for (const turn of raw as unknown[]) {
    const content = textContent(turn, turnRoles);
    if (!content) return undefined;
    contents.push(content);
  }
  // The schema's key order: contents, systemInstruction, generationConfig.
  const body: GenerateContentBody = { contents };
  if ("systemInstruction" in value) {
    // Any role the schema takes is left to it; the SDKs send none or "user".
    const system = textContent(value["systemInstruction"], turnRoles);
    if (!system) return undefined;
    body.systemInstruction = system;
  }
  if ("generationConfig" in value) {
    const config = plainConfig(value["generationConfig"]);
    if (!config) return undefined;
    body.generationConfig = config;
  }
  return body;
}
