// A 200-turn `previous_response_id` chain (the OpenAI fake, the `openai`
// SDK): every turn's ResponseActor holds only that turn's items — one input
// item, its own output, the same bytes at turn 200 as at turn 2 — and the
// history sent upstream at turn 200 is exactly the 199 earlier questions
// and answers, in order, then the new question. The per-turn CPU and stored
// bytes are bench:responses' (docs/benchmarks.md).
import t from "tap";
import type OpenAI from "openai";
import { callActor } from "../../../actors/host.ts";
import { createResponseActor } from "../../../actors/responses/response-actor.ts";
import { startCompatHarness } from "./openai-harness.ts";

t.setTimeout(240_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();
const model = "gpt-4.1-mini";
const fake = h.fakes.openai;
const turns = 200;

/** The same length at every turn (three-digit turn numbers), so a turn's own bytes do not depend on which turn it is. */
const question = (turn: number) => `question ${String(turn).padStart(3, "0")} about the lighthouse`;

interface Sent {
  role: string;
  content: string | { type: string; text?: string }[] | null;
}
const textOf = (m: Sent) => (typeof m.content === "string" ? m.content : (m.content ?? []).map((p) => p.text ?? "").join(""));

t.test(`a ${turns}-turn chain: each turn stores only its own items; turn ${turns} sends the exact history`, async (t) => {
  const actor = createResponseActor();
  const reader = { organization_id: h.user.orgId, environment_id: h.user.developmentEnvId };
  const sizes: number[] = [];
  const answers: string[] = [];
  const wrong: string[] = [];
  let previous: string | null = null;
  for (let turn = 1; turn <= turns; turn++) {
    const r: OpenAI.Responses.Response = await client.responses.create({ model, input: question(turn), ...(previous ? { previous_response_id: previous } : {}) });
    const stored = await callActor(h.troupe.services.actors, actor, r.id, "get", reader);
    if (!stored) {
      wrong.push(`turn ${turn}: not stored`);
      break;
    }
    const output = stored.response.output as unknown[];
    if (stored.input.length !== 1 || output.length !== 1 || stored.previous_response_id !== previous) wrong.push(`turn ${turn}: ${stored.input.length} input, ${output.length} output items, previous ${stored.previous_response_id}`);
    // Less the answer's text and its usage (input_tokens counts the whole history: its digits grow).
    sizes.push(JSON.stringify(stored).length - JSON.stringify(r.output_text).length - JSON.stringify(stored.response.usage ?? null).length);
    answers.push(r.output_text);
    previous = r.id;
  }
  t.same(wrong, [], "every turn holds one input item, its one output item and its link");
  // Beyond the answer's own text and its token counts, a turn stores the same bytes at turn 200 as at turn 2 (turn 1 has no link).
  const later = sizes.slice(1);
  t.equal(Math.max(...later) - Math.min(...later), 0, `stored bytes per turn (less the answer's text and usage) flat: turn 2 ${sizes[1]}, 10 ${sizes[9]}, 100 ${sizes[99]}, 200 ${sizes[199]}`);

  const sent = (fake.requests.at(-1)!.body as { messages: Sent[] }).messages.filter((m) => m.role !== "system" && m.role !== "developer");
  const expected = [...answers.slice(0, -1).flatMap((a, i) => [{ role: "user", content: question(i + 1) }, { role: "assistant", content: a }]), { role: "user", content: question(turns) }];
  t.equal(sent.length, expected.length, `${expected.length} messages upstream at turn ${turns}`);
  t.same(sent.map((m) => ({ role: m.role, content: textOf(m) })), expected, "the history upstream is exact, in order");
});
