// LangChain's withStructuredOutput, its default method, unmodified but for
// baseURL and apiKey, on a simulated model through /openai/v1: the answer
// is JSON that LangChain parses with the caller's zod schema (it throws on
// an answer that does not fit), the same for the same request.
import { ChatOpenAI } from "@langchain/openai";
import t from "tap";
import { z } from "zod";
import { startCompatHarness } from "./openai-harness.ts";

process.env["LANGCHAIN_TRACING_V2"] = "false";
process.env["LANGSMITH_TRACING"] = "false";
const h = await startCompatHarness();
t.teardown(() => h.stop());

const Film = z.object({
  title: z.string().min(1).describe("the film's title"),
  year: z.number().int().min(1888).max(2030),
  genres: z.array(z.enum(["drama", "comedy", "thriller"])).min(1).max(3),
  rating: z.number().min(0).max(10),
  sequel: z.string().nullable(),
  director: z.object({ name: z.string(), born: z.string().optional() }),
});

t.test("withStructuredOutput(zod) on simulated-chat: a parsed instance", async (t) => {
  const model = new ChatOpenAI({ model: "simulated-chat", apiKey: h.user.testKey, configuration: { baseURL: h.baseURL }, maxRetries: 0 });
  const structured = model.withStructuredOutput(Film);
  const film = await structured.invoke("Tell me about a film");
  t.ok(Film.safeParse(film).success, JSON.stringify(film));
  t.same(await structured.invoke("Tell me about a film"), film, "deterministic: the same request, the same instance");
  const sent = h.usage.at(-1);
  t.equal(sent?.model, "simulated-chat", "answered by the simulated model");
});

t.test("includeRaw: the raw message carries the JSON text", async (t) => {
  const model = new ChatOpenAI({ model: "simulated-chat-small", apiKey: h.user.testKey, configuration: { baseURL: h.baseURL }, maxRetries: 0 });
  const out = await model.withStructuredOutput(Film, { includeRaw: true }).invoke("Another film");
  t.ok(Film.safeParse(out.parsed).success);
  t.same(JSON.parse(String(out.raw.content)), out.parsed);
});
