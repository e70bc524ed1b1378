// Continuing a background response before it ended: `previous_response_id`
// naming one still queued or in progress is a 400 naming the field and
// saying it is still running (docs/decisions.md, "Responses API"); once it
// completed, the same continuation is answered, its history holding the
// background turn. Another environment's key still finds nothing (not found).
import t from "tap";
import OpenAI from "openai";
import { startFakeProviders } from "../../support/fake-providers.ts";
import { signup, startTestTroupe } from "../../support/troupe.ts";

t.setTimeout(60_000);
const providers = await startFakeProviders(["openai"]);
const openai = providers.fakes.openai;
const troupe = await startTestTroupe({}, { router: providers.router, usage: { record: () => undefined } });
t.teardown(async () => {
  await troupe.stop();
  await providers.close();
});
const user = await signup(troupe, "responses-continue-running");
const client = new OpenAI({ baseURL: `http://127.0.0.1:${troupe.port}/openai/v1`, apiKey: user.testKey, maxRetries: 0 });
const model = "gpt-4.1-mini";

t.test("previous_response_id naming a running background response is a 400; after it completed it is continued", async (t) => {
  openai.faults.eventDelayMs = 60;
  t.teardown(() => void (openai.faults.eventDelayMs = 0));
  const running = await client.responses.create({ model, input: "tell me a long story about the lighthouse keeper", background: true });
  t.match(running.status, /^(queued|in_progress)$/);

  const refused = await fetch(`http://127.0.0.1:${troupe.port}/openai/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${user.testKey}`, "content-type": "application/json" },
    body: JSON.stringify({ model, input: "and then?", previous_response_id: running.id }),
  });
  const body = (await refused.json()) as { error: { message: string; param?: string | null; details?: { path: string }[] } };
  t.equal(refused.status, 400, JSON.stringify(body));
  t.match(body.error.message, new RegExp(`Previous response with id '${running.id}' is still (queued|in progress)`));
  t.ok(JSON.stringify(body).includes("previous_response_id"), "names the field");

  let seen = running;
  while (seen.status === "queued" || seen.status === "in_progress") {
    await new Promise((r) => setTimeout(r, 50));
    seen = await client.responses.retrieve(running.id);
  }
  t.equal(seen.status, "completed");
  const before = openai.requests.length;
  const next = await client.responses.create({ model, input: "and then?", previous_response_id: running.id });
  t.equal(next.status, "completed");
  const sent = JSON.stringify(openai.requests.at(-1) ?? null);
  t.equal(openai.requests.length, before + 1);
  t.ok(sent.includes("lighthouse keeper") && sent.includes(seen.output_text.slice(0, 20)), "the continuation's history holds the background turn");
});
