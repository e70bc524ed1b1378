// Background responses with the Python `openai` SDK (the script in
// ./python prints what the SDK returned): queued at once, polled to
// completed, a stream resumed after N live and after the end, and a cancel
// mid-run that closes the upstream connection.
import t from "tap";
import { field } from "../../support/troupe.ts";
import { startCompatHarness } from "./openai-harness.ts";
import { runPython, withPythonSdk } from "./python-sdk.ts";

t.setTimeout(120_000);

await withPythonSdk(t, startCompatHarness, async (python, h) => {
  t.test("openai (Python): background, retrieve, resumed stream, cancel", async (t) => {
    // About 80 ms between the fake's events: the script sees each response running.
    h.fakes.openai.faults.eventDelayMs = 80;
    const before = h.fakes.openai.requests.length;
    const out = await runPython(python, "openai_responses_background.py", { base_url: h.baseURL, api_key: h.user.testKey, model: "gpt-4.1-mini" }, 60_000);
    h.fakes.openai.faults.eventDelayMs = 0;
    t.same(field(out, "queued"), { status: "queued", background: true });
    t.ok((field(out, "seen") as string[]).includes("in_progress"), "seen running");
    t.match(field(out, "final"), { status: "completed", output_text: /\S/ });
    const whole = field(out, "whole") as [string, number][];
    t.same(whole.map(([, n]) => n), whole.map((_, i) => i), "the whole log, numbered from 0");
    t.equal(whole.at(-1)?.[0], "response.completed");
    t.same(field(out, "resumed_live"), whole.slice(3).map(([, n]) => n), "resumed while running: exactly the events after 2");
    t.same(field(out, "resumed_after"), whole.slice(-2).map(([, n]) => n), "resumed after the end");
    t.equal(field(out, "cancelled"), "cancelled");
    t.equal(field(out, "cancelled_again"), "cancelled", "idempotent");
    const upstream = h.fakes.openai.requests.slice(before);
    t.equal(upstream.length, 2, "one provider call per response");
    t.equal(await h.fakes.openai.outcome(upstream[1]!), "closed early", "the cancelled one's upstream connection was closed");
  });
});
