// The property both hand-written body checks are held to (chat-body.test.ts,
// openai-chat-body-fast.test.ts): on generated bodies, where the short path
// answers it answers exactly what the route's schema parses (key order
// included), and where the schema refuses it does not answer.
import type { Test } from "tap";
import type { z } from "zod";

export function checkShortPath(t: Test, count: number, body: () => unknown, schema: z.ZodType, short: (value: unknown) => unknown): void {
  let answered = 0;
  let refusedBySchema = 0;
  const wrong: string[] = [];
  for (let i = 0; i < count; i++) {
    // Each path gets its own copy, as each request has its own parsed body.
    const text = JSON.stringify(body());
    const parsed = schema.safeParse(JSON.parse(text));
    const fast = short(JSON.parse(text));
    if (!parsed.success) refusedBySchema++;
    if (fast === undefined) continue;
    answered++;
    if (!parsed.success) wrong.push(`${text}: the schema refuses it, the short path answered ${JSON.stringify(fast)}`);
    else if (JSON.stringify(fast) !== JSON.stringify(parsed.data)) wrong.push(`${text}: ${JSON.stringify(fast)} ≠ the schema's ${JSON.stringify(parsed.data)}`);
  }
  t.same(wrong.slice(0, 5), [], `no body where the two differ (${wrong.length} of ${count})`);
  t.ok(answered > count / 20, `the short path answered ${answered} of ${count} bodies`);
  t.ok(refusedBySchema > count / 10, `the schema refused ${refusedBySchema} of them`);
}

/** Values of one body field: valid ones, and ones the schema refuses. */
export interface FieldValues {
  valid: readonly unknown[];
  invalid: readonly unknown[];
}

export const pickWith =
  (random: () => number) =>
  <T>(values: readonly T[]): T =>
    values[Math.floor(random() * values.length)] as T;

/** The record's keys in a random order: the output's order must be the schema's whatever the input's. */
export function shuffledKeys(random: () => number, record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).sort(() => random() - 0.5));
}

/**
 * A generated body: now and then not an object at all; usually 1–4 messages
 * from `message` (sometimes none, or not a list); each field with
 * `chance(field)`, a valid value nine times in ten (an invalid one else).
 */
export function generatedBody(random: () => number, message: () => unknown, fields: Record<string, FieldValues>, chance: (field: string) => number): unknown {
  const pick = pickWith(random);
  if (random() < 0.02) return pick([null, [], "text", 3]);
  const b: Record<string, unknown> = {};
  const count = random();
  if (count < 0.95) b["messages"] = count < 0.03 ? [] : count < 0.05 ? "hi" : Array.from({ length: 1 + Math.floor(random() * 4) }, message);
  for (const [field, { valid, invalid }] of Object.entries(fields)) {
    if (random() < chance(field)) b[field] = valid.length > 0 && random() < 0.9 ? pick(valid) : pick(invalid);
  }
  return shuffledKeys(random, b);
}
