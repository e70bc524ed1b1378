// What every route of the /gemini mount declares besides its own fields:
// its document tag, the API key (Authorization: Bearer, x-goog-api-key as
// Google's SDKs send it, or ?key= as Gemini's REST examples do), and
// Google's error dialect. Both API versions are served alike: the SDKs call
// v1 unless told v1beta (apiVersion / GOOGLE_GENAI_API_VERSION=beta).
import { geminiDialect } from "./errors.ts";

export const geminiVersions = ["v1", "v1beta"] as const;
export type GeminiVersion = (typeof geminiVersions)[number];

export const geminiMount = {
  tag: "Gemini-compatible",
  auth: "api_key",
  apiKeyHeader: "x-goog-api-key",
  apiKeyQuery: "key",
  dialect: geminiDialect,
} as const;
