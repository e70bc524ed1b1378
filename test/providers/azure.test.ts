// Azure OpenAI end to end over HTTP, embedded mode: Troupe started from
// AZURE_OPENAI_* settings answers /v1/chat/completions (plain, SSE, tool
// round trips) and /v1/embeddings through the Azure fake, which speaks
// Azure's wire format (per-deployment URLs, api-version, api-key) and
// refuses anything else. Also: the settings' parsing and refusals.
import t from "tap";
import { loadConfig } from "../../gateway/config.ts";
import { azureUrl } from "../../providers/azure/index.ts";
import { startAzureOpenAIFake } from "../fakes/azure-openai-fake.ts";
import { field } from "../support/troupe.ts";
import { plainAndStreamed, post, startWith, toolRoundTrip } from "./provider-e2e.ts";

t.setTimeout(60_000);

t.test("settings: defaults, deployments as JSON or pairs, refusals naming the variable", async (t) => {
  const az = (env: Record<string, string>) => loadConfig(env).providers.azure;
  t.match(az({}), { apiKey: undefined, apiVersion: "2024-10-21", deployments: {} });
  t.same(az({ AZURE_OPENAI_DEPLOYMENTS: "gpt-4o=prod-4o, text-embedding-3-small=emb" }).deployments, { "gpt-4o": "prod-4o", "text-embedding-3-small": "emb" });
  t.same(az({ AZURE_OPENAI_DEPLOYMENTS: '{"gpt-4o":"prod-4o"}' }).deployments, { "gpt-4o": "prod-4o" });
  t.throws(() => az({ AZURE_OPENAI_DEPLOYMENTS: "gpt-4o" }), /"gpt-4o" is not model=deployment[\s\S]*AZURE_OPENAI_DEPLOYMENTS/);
  t.throws(() => az({ AZURE_OPENAI_DEPLOYMENTS: '{"gpt-4o": 3}' }), /AZURE_OPENAI_DEPLOYMENTS/);
  t.throws(() => az({ AZURE_OPENAI_API_VERSION: "latest" }), /AZURE_OPENAI_API_VERSION/);
  t.throws(() => az({ AZURE_OPENAI_API_KEY: "k" }), /AZURE_OPENAI_API_KEY needs AZURE_OPENAI_ENDPOINT/);
  t.equal(
    azureUrl({ endpoint: "https://res.openai.azure.com/", apiVersion: "2024-10-21", deployments: { "gpt-4o": "prod 4o" } }, "chat", "gpt-4o"),
    "https://res.openai.azure.com/openai/deployments/prod%204o/chat/completions?api-version=2024-10-21",
  );
});

const fake = await startAzureOpenAIFake({
  apiKey: "az-key",
  deployments: { "prod-4o": "gpt-4o-2024-08-06", "gpt-4o-mini": "gpt-4o-mini-2024-07-18", "emb-small": "text-embedding-3-small" },
});
const s = await startWith({
  AZURE_OPENAI_API_KEY: "az-key",
  AZURE_OPENAI_ENDPOINT: fake.url,
  AZURE_OPENAI_DEPLOYMENTS: "gpt-4o=prod-4o,text-embedding-3-small=emb-small",
});
t.teardown(async () => {
  await s.troupe.stop();
  await fake.close();
});

t.test("chat, plain and streamed, through the mapped deployment", async (t) => {
  await plainAndStreamed(t, s, "azure/gpt-4o", "azure");
  const sent = fake.requests.filter((r) => r.path.includes("/chat/completions"));
  t.ok(sent.length >= 2);
  for (const r of sent) {
    t.equal(r.path, "/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21");
    t.equal(r.headers["api-key"], "az-key");
    t.notOk(r.headers.authorization, "no Bearer token");
  }
  t.match(sent.at(-1)!.body, { stream: true, stream_options: { include_usage: true } });
});

t.test("a model without a mapping uses a deployment named like it", async (t) => {
  await plainAndStreamed(t, s, "azure/gpt-4o-mini", "azure");
  t.equal(fake.requests.at(-1)!.path, "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21");
});

for (const stream of [false, true]) {
  t.test(`tool round trip, ${stream ? "SSE" : "JSON"}`, async (t) => {
    await toolRoundTrip(t, s, "azure/gpt-4o", stream);
  });
}

t.test("embeddings, default and custom dimensions", async (t) => {
  const r = await post(s, "/v1/embeddings", { model: "azure/text-embedding-3-small", routing_strategy: "manual", input: ["first", "second"] });
  t.equal(r.status, 200, r.text);
  t.match(r.body, { model: "azure/text-embedding-3-small", provider: "azure", dimensions: 1536 });
  t.equal((field(r.body, "embeddings") as number[][]).length, 2);
  t.equal(fake.requests.at(-1)!.path, "/openai/deployments/emb-small/embeddings?api-version=2024-10-21");
  const small = await post(s, "/v1/embeddings", { model: "azure/text-embedding-3-small", input: "x", dimensions: 64 });
  t.equal(field(small.body, "dimensions"), 64);
});

t.test("the catalogue lists the Azure models as available", async (t) => {
  const r = await s.troupe.request("GET", "/v1/models", { token: s.key });
  const ids = (field(r.body, "data") as { id: string; provider: string; available: boolean }[]).filter((m) => m.provider === "azure");
  t.same(ids.map((m) => [m.id, m.available]), [["azure/gpt-4o", true], ["azure/gpt-4o-mini", true], ["azure/text-embedding-3-small", true]]);
});
