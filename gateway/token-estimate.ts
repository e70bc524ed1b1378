// What an AI call reserves in its key's tokens-per-minute window before any
// provider call (tenancy/key-rate-limit.ts reserveTokens): an estimate from
// the JSON body alone, the same on every mount. Input: one token per 4 bytes
// of the body (the usual English ratio; JSON syntax makes it an
// over-estimate, which a reservation should be). Output: the most the body
// asks for (max_tokens, max_completion_tokens, max_output_tokens, Gemini's
// generationConfig.maxOutputTokens), else `defaultOutputReservation`. The
// bill replaces it with the call's real count, so the estimate only decides
// what concurrent calls see of each other.

/** Output tokens reserved for a call that names no maximum (docs/guides/access-control.md). */
export const defaultOutputReservation = 256;
const bytesPerToken = 4;

export function tokenEstimate(bodyBytes: number, body: unknown): number {
  return Math.ceil(bodyBytes / bytesPerToken) + (maxOutputOf(body) ?? defaultOutputReservation);
}

function maxOutputOf(body: unknown): number | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const fields = body as Record<string, unknown>;
  const config = fields["generationConfig"];
  const candidates = [fields["max_tokens"], fields["max_completion_tokens"], fields["max_output_tokens"], typeof config === "object" && config !== null ? (config as Record<string, unknown>)["maxOutputTokens"] : undefined];
  for (const value of candidates) if (typeof value === "number" && Number.isFinite(value) && value > 0) return Math.ceil(value);
  return undefined;
}
