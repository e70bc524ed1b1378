// A turn never takes its conversation past AGENT_CONVERSATION_MAX_BYTES
// (actors/conversation/turn-room.ts), run on the loop itself with a scripted
// model and memory: whatever the model answers and the tools return, the
// stored conversation stays within its cap, every tool call of the history
// is answered, and the turn ends idle with a message saying why.
import t from "tap";
import { agentMessage, conversationData } from "../support/conversation-data.ts";
import { conversationBytes } from "../../actors/conversation/conversation-size.ts";
import { closingReserveBytes } from "../../actors/conversation/turn-room.ts";
import { runTurn, type TurnDeps } from "../../actors/conversation/turn-loop.ts";
import type { AgentMessage, ConversationData } from "../../actors/conversation/types.ts";
import type { ChatResult } from "../../providers/types.ts";
import type { OrgIndex } from "../../vectors/org-index.ts";
import { seededRandom } from "../support/seeded-random.ts";

const conversation = (tools: ConversationData["tools"] = []): ConversationData => conversationData({ tools, messages: [agentMessage("go")] });

const reply = (content: string, calls: { name: string; arguments?: Record<string, unknown> }[] = [], step = 0): ChatResult => ({
  content,
  finish_reason: calls.length > 0 ? "tool_calls" : "stop",
  model: "double",
  provider: "double",
  input_tokens: 1,
  output_tokens: 1,
  tool_calls: calls.length > 0 ? calls.map((c, i) => ({ id: `call_${step}_${i}`, name: c.name, arguments: c.arguments ?? { query: "q" } })) : null,
});

/** A memory whose every search returns `count` records of `chars` characters; counts its searches. */
function memory(count: number, chars: number) {
  const searched = { n: 0 };
  const index = {
    search: async () => {
      searched.n += 1;
      return Array.from({ length: count }, (_, i) => ({ id: `rec_${i}`, content: "m".repeat(chars), metadata: {}, distance: i / 100, organization_id: "org_1", model: "m", created_at: "" }));
    },
  } as unknown as OrgIndex;
  return { index, searched };
}

let ids = 0;
const deps = (chat: TurnDeps["chat"], index: OrgIndex, extra: Partial<TurnDeps> = {}): TurnDeps => ({
  chat,
  memory: index,
  newId: () => `0193c6f0-0000-7000-8000-${String(++ids).padStart(12, "0")}`,
  now: () => "2026-11-28T00:00:01.000Z",
  ...extra,
});

function unanswered(messages: AgentMessage[]): string[] {
  const answered = new Set(messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id));
  return messages.flatMap((m) => m.tool_calls ?? []).filter((c) => !answered.has(c.id)).map((c) => c.id);
}

t.test("a model answer that would pass the cap is not kept; the turn says why", async (t) => {
  const data = conversation();
  const cap = 8192;
  await runTurn(data, deps(async () => reply("x".repeat(cap)), memory(0, 0).index, { maxBytes: cap }));
  t.ok(conversationBytes(data) <= cap, `${conversationBytes(data)} bytes`);
  t.equal(data.status, "idle");
  t.equal(data.messages.length, 2, "the user message and the notice");
  t.match(data.messages[1]?.content, /reached its cap of 8192 bytes.*the model's answer \(\d+ bytes\) did not fit/);
});

t.test("past the cap the step's other calls are answered, not run, and the turn ends idle", async (t) => {
  const data = conversation([{ name: "lookup", description: "", parameters: {} }]);
  const { index, searched } = memory(10, 2000);
  const chat = async () => reply("", [{ name: "search_memory" }, { name: "lookup" }, { name: "search_memory" }, { name: "generate_video", arguments: { prompt: "p" } }]);
  let videos = 0;
  const startVideo = async () => ({ job_id: `job_${++videos}` });
  await runTurn(data, deps(chat, index, { maxBytes: 12_000, startVideo }));
  t.ok(conversationBytes(data) <= 12_000, `${conversationBytes(data)} bytes`);
  t.equal(data.status, "idle", "not parked in requires_action for lookup, nor in generating_media");
  t.same(data.pending_tool_call_ids, []);
  t.equal(data.pending_video, null);
  t.equal(searched.n, 1, "the second search never ran");
  t.equal(videos, 0, "no video job was started past the cap");
  t.same(unanswered(data.messages), [], "every call is answered");
  t.equal(data.messages.filter((m) => m.content.includes("not added: the conversation reached its cap")).length, 4);
  t.match(data.messages.at(-1)?.content, /a search_memory result \(\d+ bytes\) did not fit/);
});

t.test("a video started before a result that does not fit is answered too, and the turn ends idle", async (t) => {
  const data = conversation();
  const { index } = memory(10, 2000);
  const chat = async () => reply("", [{ name: "generate_video", arguments: { prompt: "p" } }, { name: "search_memory" }]);
  await runTurn(data, deps(chat, index, { maxBytes: 12_000, startVideo: async () => ({ job_id: "job_1" }) }));
  t.equal(data.status, "idle");
  t.equal(data.pending_video, null, "the job's result will find the conversation idle and not be added");
  t.same(unanswered(data.messages), []);
  t.ok(conversationBytes(data) <= 12_000);
});

t.test("results that fit are kept, and a single result is cut to the tool result limit", async (t) => {
  const data = conversation();
  const { index } = memory(100, 3000);
  let step = 0;
  const chat = async () => (step++ === 0 ? reply("", [{ name: "search_memory", arguments: { query: "q", top_k: 100 } }]) : reply("done"));
  await runTurn(data, deps(chat, index, { maxBytes: 1_000_000, toolResultMaxBytes: 16_384 }));
  const tool = data.messages.find((m) => m.role === "tool");
  t.ok(Buffer.byteLength(tool?.content ?? "") <= 16_384);
  t.match(JSON.parse(tool?.content ?? "{}"), { truncated: { omitted_results: Number, limit_bytes: 16_384 } });
  t.equal(data.messages.at(-1)?.content, "done");
});

t.test("fuzz: whatever the sizes, the stored conversation stays within its cap and every call is answered", async (t) => {
  const random = seededRandom(7);
  let stopped = 0;
  for (let run = 0; run < 300; run++) {
    const cap = 4096 + Math.floor(random() * 60_000);
    const { index } = memory(1 + Math.floor(random() * 20), Math.floor(random() * 5000));
    const data = conversation([{ name: "lookup", description: "", parameters: {} }]);
    let step = 0;
    const chat = async (): Promise<ChatResult> => {
      const s = step++;
      const calls = Array.from({ length: Math.floor(random() * 4) }, () => ({ name: random() < 0.7 ? "search_memory" : (["nope", "lookup", "generate_video"][Math.floor(random() * 3)] ?? "nope"), arguments: { query: "q", content: "c".repeat(Math.floor(random() * 3000)) } }));
      return reply("a".repeat(Math.floor(random() * (random() < 0.1 ? cap : 2000))), calls, s);
    };
    const toolResultMaxBytes = random() < 0.5 ? 1024 + Math.floor(random() * 20_000) : undefined;
    await runTurn(data, deps(chat, index, { maxBytes: cap, toolResultMaxBytes, startVideo: async () => ({ job_id: "job" }) }));
    const bytes = conversationBytes(data);
    if (bytes > cap) t.fail(`run ${run}: ${bytes} bytes past the cap of ${cap}`);
    const open = unanswered(data.messages);
    if (open.length > 0 && data.status === "idle") t.fail(`run ${run}: unanswered calls ${open.join(", ")} in an idle conversation`);
    if (data.status === "idle" && data.messages.at(-1)?.role !== "assistant") t.fail(`run ${run}: an idle turn ends with a ${data.messages.at(-1)?.role} message`);
    if (data.messages.at(-1)?.content.startsWith("The conversation reached its cap")) stopped += 1;
    if (cap - bytes < 0 || (data.status !== "idle" && cap - bytes < closingReserveBytes)) t.fail(`run ${run}: a parked turn left less than the closing reserve`);
  }
  t.ok(stopped >= 50, `${stopped} of 300 turns stopped at the cap`);
});
