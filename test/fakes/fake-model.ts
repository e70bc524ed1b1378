// The fakes' shared "model": deterministic behaviour that exercises tool
// round trips. With tool results after the last user text it answers from
// them; with tools declared it calls the first one; otherwise it echoes.
export type FakeAnswer = { text: string } | { toolCall: { name: string; args: Record<string, unknown> } };

export function fakeModel(input: { tools: string[]; lastUser: string; toolResults: string[] }): FakeAnswer {
  if (input.toolResults.length > 0) return { text: `Tool said: ${input.toolResults.join(" | ")}` };
  if (input.tools.length > 0) return { toolCall: { name: input.tools[0]!, args: { input: input.lastUser, n: 1 } } };
  return { text: `Echo: ${input.lastUser}` };
}

/** Applies a max token budget (tokens = words here). */
export function truncateWords(text: string, max: number | undefined): { text: string; truncated: boolean } {
  if (max === undefined) return { text, truncated: false };
  const parts = text.match(/\s*\S+/g) ?? [];
  if (parts.length <= max) return { text, truncated: false };
  return { text: parts.slice(0, max).join(""), truncated: true };
}
