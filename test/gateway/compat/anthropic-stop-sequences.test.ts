// stop_sequences over a stream of fragments (gateway/compat/anthropic/stop-sequences.ts):
// a sequence split across fragments still stops the text, nothing after it
// is ever released, and text held back that never became a sequence comes out at the end.
import t from "tap";
import { findStop, StopSequenceFilter } from "../../../gateway/compat/anthropic/stop-sequences.ts";

const run = (sequences: string[], fragments: string[]) => {
  const filter = new StopSequenceFilter(sequences);
  const sent = fragments.map((f) => filter.push(f));
  return { sent, rest: filter.flush(), stoppedBy: filter.stoppedBy };
};

t.test("a sequence split across fragments stops the text before it", async (t) => {
  const r = run(["STOP"], ["Echo: one tw", "o ST", "OP three", " four"]);
  t.same(r.sent, ["Echo: one tw", "o ", "", ""], "'ST' is held until 'OP' completes the sequence");
  t.equal(r.stoppedBy, "STOP");
  t.equal(r.rest, "");
});

t.test("a held prefix that never completes is released", async (t) => {
  const r = run(["STOP"], ["a ST", "ART b S"]);
  t.same(r.sent, ["a ", "START b "]);
  t.equal(r.rest, "S", "the tail that could still start a sequence comes out at the end");
  t.equal(r.stoppedBy, undefined);
  t.equal(r.sent.join("") + r.rest, "a START b S", "nothing lost");
});

t.test("the earliest of several sequences wins; none means no holding back", async (t) => {
  t.same(findStop("x END y HALT", ["HALT", "END"]), { index: 2, sequence: "END" });
  t.equal(findStop("nothing here", ["HALT"]), undefined);
  t.same(run([], ["a S", "TOP"]).sent, ["a S", "TOP"]);
  t.equal(run(["\n\nHuman:", "###"], ["one #", "## two"]).stoppedBy, "###");
});
