// The official `openai` PyPI SDK, unmodified, against /openai/v1/conversations
// (python/openai_conversations.py): every conversations.* and
// conversations.items.* call, auto-paging in both orders, the 20-item limit
// as the SDK's BadRequestError naming `items`, and a response continuing
// the conversation (its input and output appended).
import t from "tap";
import { field } from "../../support/troupe.ts";
import { startCompatHarness } from "./openai-harness.ts";
import { runPython, withPythonSdk } from "./python-sdk.ts";

t.setTimeout(120_000);
await withPythonSdk(t, startCompatHarness, async (python, h) => {
  const out = await runPython(python, "openai_conversations.py", { base_url: h.baseURL, api_key: h.user.testKey, model: "gpt-4.1-mini" });
  t.match(field(out, "sdk"), /^\d+\./, "the SDK ran");
  const id = field(out, "created", "id");
  t.match(field(out, "created"), { id: /^conv_/, object: "conversation", metadata: { topic: "py" }, created_at_type: "int" });
  t.equal(field(out, "retrieved"), id);
  t.same(field(out, "updated"), { topic: "changed" });
  t.match(field(out, "added"), { object: "list", count: 5, first_id: /^msg_/, last_id: /^msg_/, has_more: false });
  t.same(field(out, "asc"), ["m0", "m1", "m2", "m3", "m4", "m5", "m6"], "asc, 2 a page, auto-paged");
  t.same(field(out, "desc"), ["m6", "m5", "m4", "m3", "m2", "m1", "m0"], "desc by default, 3 a page");
  t.match(field(out, "item"), { id: field(out, "added", "first_id"), type: "message", role: "user", status: "completed", text: "m2" });
  t.same(field(out, "item_deleted"), { id, object: "conversation" });
  t.same(field(out, "too_many"), { class: "BadRequestError", status: 400, param: "items" });
  t.same(field(out, "response"), { conversation: id, output_text: "Echo: next turn" });
  t.equal(field(out, "after_response"), 8, "6 items left, the response's input and output appended");
  t.same(field(out, "deleted"), { id, object: "conversation.deleted", deleted: true });
  t.same(field(out, "after_delete"), { class: "NotFoundError", status: 404 });
});
