// Translation (docs/api/chat.md#translation): a fixed instruction on a chat model of
// category `translation`. The simulated provider recognizes the same
// instruction (simulated/chat.ts), so the two must stay in step.
import { z } from "zod";
import type { CallContext, Router } from "./router.ts";
import { routingStrategySchema } from "./types.ts";

export const translationRequestSchema = z
  .object({
    text: z.string().min(1).max(100_000),
    target_language: z.string().min(2).max(40),
    source_language: z.string().min(2).max(40).nullable().optional(),
    model: z.string().min(1).nullable().optional(),
    routing_strategy: routingStrategySchema.default("auto"),
  })
  .strict();
export type TranslationRequest = z.infer<typeof translationRequestSchema>;

export interface TranslationResult {
  text: string;
  /** As given; null when the caller did not name it (no detection is attempted). */
  source_language: string | null;
  target_language: string;
  model: string;
  provider: string;
  input_tokens: number;
  output_tokens: number;
}

export function translationInstruction(target: string, source?: string | null): string {
  return `Translate the user's text ${source ? `from ${source} ` : ""}into ${target}. Reply with the translation only.`;
}

/** `byok`: the organization's own key served it (billed at the BYOK price). */
export async function translate(router: Router, req: TranslationRequest, ctx: CallContext = {}): Promise<TranslationResult & { byok?: true }> {
  const result = await router.chat(
    {
      model: req.model,
      routing_strategy: req.routing_strategy,
      temperature: 0,
      messages: [
        { role: "system", content: translationInstruction(req.target_language, req.source_language) },
        { role: "user", content: req.text },
      ],
    },
    { ...ctx, category: "translation" },
  );
  return {
    text: result.content.trim(),
    source_language: req.source_language ?? null,
    target_language: req.target_language,
    model: result.model,
    provider: result.provider,
    input_tokens: result.input_tokens,
    output_tokens: result.output_tokens,
    ...(result.extras?.byok ? { byok: true as const } : {}),
  };
}
