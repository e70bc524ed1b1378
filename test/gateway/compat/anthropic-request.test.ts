// Anthropic Messages request → Troupe's chat request
// (gateway/compat/anthropic/request.ts): each block kind lands where the
// router and every provider adapter read it, and blocks in the wrong turn
// are 400s naming their path.
import t from "tap";
import { isTroupeError } from "../../../core/errors.ts";
import { toChatRequest } from "../../../gateway/compat/anthropic/request.ts";
import { messagesBodySchema } from "../../../gateway/compat/anthropic/schemas.ts";

const parse = (body: Record<string, unknown>) => messagesBodySchema.parse({ model: "gpt-4.1-mini", max_tokens: 10, ...body });

t.test("system, images, tool_use and tool_result blocks", async (t) => {
  const request = toChatRequest(
    parse({
      system: [{ type: "text", text: "Be brief." }, { type: "text", text: "Be kind.", cache_control: { type: "ephemeral" } }],
      temperature: 0.5,
      tools: [{ name: "lookup", input_schema: { type: "object", properties: { q: { type: "string" } } } }],
      tool_choice: { type: "tool", name: "lookup", disable_parallel_tool_use: true },
      messages: [
        { role: "user", content: [{ type: "image", source: { type: "url", url: "https://example.com/a.png" } }, { type: "text", text: "Look it up" }] },
        { role: "assistant", content: [{ type: "text", text: "Looking." }, { type: "tool_use", id: "tu_1", name: "lookup", input: { q: "a" } }, { type: "tool_use", id: "tu_2", name: "lookup", input: { q: "b" } }] },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "tu_1", content: [{ type: "text", text: "first" }, { type: "text", text: "part" }] },
            { type: "tool_result", tool_use_id: "tu_2", content: "broken", is_error: true },
            { type: "text", text: "Thanks" },
          ],
        },
      ],
    }),
  );
  t.match(request, { model: "gpt-4.1-mini", routing_strategy: "auto", max_tokens: 10, temperature: 0.5, tool_choice: { name: "lookup" } });
  t.same(request.tools, [{ name: "lookup", description: "", parameters: { type: "object", properties: { q: { type: "string" } } } }]);
  t.same(request.messages, [
    // The system block's cache_control is a breakpoint after the system prompt (sent on to Anthropic only).
    { role: "system", content: "Be brief.\nBe kind.", cache: {} },
    { role: "user", content: "Look it up", images: [{ url: "https://example.com/a.png" }] },
    { role: "assistant", content: "Looking.", tool_calls: [{ id: "tu_1", name: "lookup", arguments: { q: "a" } }, { id: "tu_2", name: "lookup", arguments: { q: "b" } }] },
    { role: "tool", tool_call_id: "tu_1", content: "first\npart" },
    { role: "tool", tool_call_id: "tu_2", content: "Error: broken" },
    { role: "user", content: "Thanks" },
  ]);
});

t.test("tool_choice auto, any and none; a turn of only tool results adds no empty user message", async (t) => {
  const choice = (tool_choice: unknown) => toChatRequest(parse({ tool_choice, tools: [{ name: "x", input_schema: { type: "object" } }], messages: [{ role: "user", content: "hi" }] })).tool_choice;
  t.equal(choice({ type: "auto" }), "auto");
  t.equal(choice({ type: "any" }), "required");
  t.equal(choice({ type: "none" }), "none");
  const request = toChatRequest(
    parse({
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: [{ type: "tool_use", id: "a", name: "x", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "a" }] },
      ],
    }),
  );
  t.same(request.messages.at(-1), { role: "tool", tool_call_id: "a", content: "" });
  t.same(request.messages[1], { role: "assistant", content: "", tool_calls: [{ id: "a", name: "x", arguments: {} }] });
});

t.test("blocks in the wrong turn are 400s naming their path", async (t) => {
  const refused = (messages: unknown[]) => {
    try {
      toChatRequest(parse({ messages }));
    } catch (error) {
      return isTroupeError(error) ? { status: error.status, message: error.message } : undefined;
    }
    return undefined;
  };
  t.match(refused([{ role: "user", content: [{ type: "tool_use", id: "a", name: "x", input: {} }] }]), { status: 400, message: /body\.messages\.0\.content\.0: tool_use blocks belong in assistant messages/ });
  t.match(refused([{ role: "user", content: "hi" }, { role: "assistant", content: [{ type: "tool_result", tool_use_id: "a" }] }]), { status: 400, message: /messages\.1\.content\.0/ });
  t.match(refused([{ role: "user", content: "hi" }, { role: "assistant", content: [{ type: "image", source: { type: "url", url: "https://example.com/u.png" } }] }]), { status: 400, message: /image blocks belong in user messages/ });
  const image = { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } };
  const asked = [{ role: "user", content: "hi" }, { role: "assistant", content: [{ type: "tool_use", id: "a", name: "x", input: {} }] }];
  t.match(refused([...asked, { role: "user", content: [{ type: "tool_result", tool_use_id: "a", content: [image] }] }]), { status: 400, message: /images inside tool_result/ });
  t.match(refused([...asked, { role: "user", content: [{ type: "tool_result", tool_use_id: "b" }] }]), { status: 400, message: /body\.messages\.2\.content\.0\.tool_use_id: no earlier tool_use block has id b/ });
  const twice = { role: "user", content: [{ type: "tool_result", tool_use_id: "a" }] };
  t.match(refused([...asked, twice, twice]), { status: 400, message: /messages\.3\.content\.0\.tool_use_id: .*already answered/ });
});

t.test("the schema: max_tokens required, unknown fields refused, input_schema an object schema", async (t) => {
  t.notOk(messagesBodySchema.safeParse({ model: "m", messages: [{ role: "user", content: "hi" }] }).success);
  t.notOk(messagesBodySchema.safeParse({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "hi" }], thinking: { type: "enabled" } }).success);
  t.notOk(messagesBodySchema.safeParse({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "hi" }], tools: [{ name: "x", input_schema: { type: "string" } }] }).success);
  t.ok(messagesBodySchema.safeParse({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "hi" }], top_p: 0.9, top_k: 40, metadata: { user_id: "u" } }).success);
});
