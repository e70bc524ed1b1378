// Every adapter parses what its provider answered with a zod schema of that
// answer; a mismatch is the provider's protocol failure (not retried, but
// another provider may do better), never a crash inside the adapter.
import { z } from "zod";
import { ProviderCallError } from "./errors.ts";

export function parseUpstream<T>(provider: string, schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new ProviderCallError(provider, "protocol", `${provider} sent an unexpected answer: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}
