// The fakes' shared "model": deterministic behaviour that exercises tool
// round trips. With tool results after the last user text it answers from
// them; with tools declared it calls the first one, or the one the user's
// text names as `[[tool:NAME {json args}]]` (a script for agents that
// declare many tools, as Claude Code does), unless it says `[[no tool]]`;
// otherwise it echoes.
export type FakeAnswer = { text: string } | { toolCall: { name: string; args: Record<string, unknown> } };

export function fakeModel(input: { tools: string[]; lastUser: string; toolResults: string[] }): FakeAnswer {
  if (input.toolResults.length > 0) return { text: `Tool said: ${input.toolResults.join(" | ")}` };
  const scripted = /\[\[tool:([A-Za-z0-9_-]+) (\{.*?\})\]\]/.exec(input.lastUser);
  if (scripted && input.tools.includes(scripted[1]!)) return { toolCall: { name: scripted[1]!, args: JSON.parse(scripted[2]!) as Record<string, unknown> } };
  if (input.tools.length > 0 && !input.lastUser.includes("[[no tool]]")) return { toolCall: { name: input.tools[0]!, args: { input: input.lastUser, n: 1 } } };
  return { text: `Echo: ${input.lastUser}` };
}

/** Applies a max token budget (tokens = words here). */
export function truncateWords(text: string, max: number | undefined): { text: string; truncated: boolean } {
  if (max === undefined) return { text, truncated: false };
  const parts = text.match(/\s*\S+/g) ?? [];
  if (parts.length <= max) return { text, truncated: false };
  return { text: parts.slice(0, max).join(""), truncated: true };
}
