// What the hand-written body checks share (routes/chat-body.ts for /v1,
// compat/openai/chat-body-fast.ts for /openai/v1): a body's common form is
// found by hand, anything else is left to the route's schema.

export function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export interface PlainTextMessage {
  role: string;
  content: string;
  /** The one optional string field the caller allows (an id, a name). */
  extra: string | undefined;
}

/**
 * The messages when every one is a plain record of a role among `roles`, a
 * string content and optionally a string `extra` field, and nothing else;
 * else undefined (as for an empty list).
 */
export function plainTextMessages(value: unknown, roles: ReadonlySet<string>, extra: string): PlainTextMessage[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  const messages: PlainTextMessage[] = [];
  for (const item of value as unknown[]) {
    if (!isPlainRecord(item)) return undefined;
    for (const key of Object.keys(item)) if (key !== "role" && key !== "content" && key !== extra) return undefined;
    const { role, content } = item;
    const extraValue = item[extra];
    if (typeof role !== "string" || !roles.has(role) || typeof content !== "string") return undefined;
    if (extraValue !== undefined && typeof extraValue !== "string") return undefined;
    messages.push({ role, content, extra: extraValue });
  }
  return messages;
}
