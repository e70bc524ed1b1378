// What the semantic cache compares: the context digest covers everything but
// the last user message (and the organization and environment), and the
// requests it never takes are refused with their reason before anything is
// embedded.
import t from "tap";
import type { ChatRequest } from "../../../providers/chat-request.ts";
import type { KeyOwner } from "../../../gateway/cache/cache-key.ts";
import { SEMANTIC_MAX_MESSAGE_CHARS, semanticContext } from "../../../gateway/cache/semantic-context.ts";

const owner: KeyOwner = { organization_id: "org", project_id: "proj", environment_id: "env", live: false };
const base: ChatRequest = { model: "simulated-chat", temperature: 0.3, messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }, { role: "assistant", content: "Hello!" }, { role: "user", content: "What is 2 + 2?" }] };
const digest = (req: ChatRequest, o: KeyOwner = owner) => {
  const split = semanticContext(o, req, "text");
  if (!split.eligible) throw new Error(`not eligible: ${split.reason}`);
  return split.context.digest;
};
const withLast = (content: string): ChatRequest => ({ ...base, messages: [...base.messages.slice(0, -1), { role: "user", content }] });

t.test("the digest ignores the last user message and nothing else", async (t) => {
  const split = semanticContext(owner, base, "text");
  t.match(split, { eligible: true, context: { lastUserMessage: "What is 2 + 2?", digest: /^[0-9a-f]{64}$/ } });
  t.equal(digest(withLast("what's two plus two")), digest(base), "another last message: the same context");
  const changed: Array<[string, ChatRequest | [ChatRequest, KeyOwner]]> = [
    ["the system prompt", { ...base, messages: [{ role: "system", content: "Be long." }, ...base.messages.slice(1)] }],
    ["an earlier turn", { ...base, messages: [base.messages[0]!, { role: "user", content: "Hey" }, ...base.messages.slice(2)] }],
    ["the model", { ...base, model: "simulated-chat-small" }],
    ["a parameter", { ...base, temperature: 0.4 }],
    ["the tools", { ...base, tools: [{ name: "calc", description: "", parameters: { type: "object", properties: {} } }] }],
    ["the organization", [base, { ...owner, organization_id: "org-2" }]],
    ["the environment", [base, { ...owner, environment_id: "env-2" }]],
  ];
  for (const [what, change] of changed) {
    const other = Array.isArray(change) ? digest(change[0], change[1]) : digest(change);
    t.not(other, digest(base), `${what} changes the context`);
  }
});

t.test("never semantic, with the reason", async (t) => {
  const reason = (req: ChatRequest) => {
    const split = semanticContext(owner, req, "text");
    return split.eligible ? "eligible" : split.reason;
  };
  t.equal(reason({ ...base, messages: [...base.messages, { role: "assistant", content: "Sure," }] }), "last_not_user");
  t.equal(reason({ ...base, messages: [{ role: "assistant", content: "", tool_calls: [{ id: "c", name: "calc", arguments: {} }] }, { role: "tool", content: "4", tool_call_id: "c" }, { role: "user", content: "Thanks, and 3 + 3?" }] }), "tool_message");
  t.equal(reason({ ...base, response_format: { type: "json_object" } }), "structured_output");
  t.equal(reason(withLast("   ")), "empty_message");
  t.equal(reason(withLast("x".repeat(SEMANTIC_MAX_MESSAGE_CHARS + 1))), "message_too_long");
  t.equal(reason(withLast("x".repeat(SEMANTIC_MAX_MESSAGE_CHARS))), "eligible");
  const image = withLast("What is in it?");
  image.messages[image.messages.length - 1]!.images = [{ url: "https://example.test/cat.png" }];
  t.equal(reason(image), "images");
});
