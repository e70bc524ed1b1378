// The chunks /openai/v1 streams for a tool call, without a server: the
// header delta, then argument fragments cut between code points (a piece
// ending in half a surrogate pair would reach a client as a lone surrogate
// that a JSON decoder keeps apart from its other half), two calls by index.
import t from "tap";
import { chunkStream } from "../../../gateway/compat/openai/chat-stream.ts";

type ToolDelta = { index: number; id?: string; type?: string; function: { name?: string; arguments: string } };
const toolDeltas = (chunks: object[]): ToolDelta[] =>
  chunks.flatMap((c) => (c as { choices: { delta: { tool_calls?: ToolDelta[] } }[] }).choices.flatMap((ch) => ch.delta.tool_calls ?? []));

t.test("a long call with emoji: fragments of whole code points that join to the arguments", async (t) => {
  const stream = chunkStream("chatcmpl-1", 0, "m", false);
  const args = { text: `${"😀".repeat(40)} weather`, city: "Zürich 🇨🇭" };
  const deltas = toolDeltas(stream.chunks({ tool_call: { id: "call_1", name: "get_weather", arguments: args } }));
  t.same(deltas[0], { index: 0, id: "call_1", type: "function", function: { name: "get_weather", arguments: "" } });
  const pieces = deltas.slice(1).map((d) => d.function.arguments);
  t.ok(pieces.length >= 3, "several fragments");
  const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
  t.ok(pieces.every((p) => !lone.test(p)), "no fragment holds half a surrogate pair");
  t.same(JSON.parse(pieces.join("")), args);
  t.ok(deltas.slice(1).every((d) => Object.keys(d).join() === "index,function" && d.index === 0));
});

t.test("a second call takes the next index", async (t) => {
  const stream = chunkStream("chatcmpl-2", 0, "m", false);
  stream.chunks({ tool_call: { id: "a", name: "f", arguments: {} } });
  const second = toolDeltas(stream.chunks({ tool_call: { id: "b", name: "g", arguments: { x: 1 } } }));
  t.match(second, [{ index: 1, id: "b", function: { name: "g", arguments: "" } }, { index: 1, function: { arguments: '{"x":1}' } }]);
});
