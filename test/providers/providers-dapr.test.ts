// Azure OpenAI and Mistral in Dapr mode: two replicas of the real gateway
// (TROUPE_MODE=dapr, each with its daprd) sharing Redis, configured with
// both providers pointed at their fakes. Each replica builds its router from
// the registry like the embedded mode; the conversations (plain, streamed,
// tool round trips) and embeddings go through one replica, then the other.
import t from "tap";
import { startAzureOpenAIFake } from "../fakes/azure-openai-fake.ts";
import { startMistralFake } from "../fakes/mistral-fake.ts";
import { startDaprCluster } from "../support/dapr-openai-cluster.ts";
import { field, request, signup } from "../support/troupe.ts";
import { plainAndStreamed, post, toolRoundTrip, type Started } from "./provider-e2e.ts";

t.setTimeout(240_000);
const azure = await startAzureOpenAIFake({ apiKey: "az-key", deployments: { "prod-4o": "gpt-4o-2024-08-06", "text-embedding-3-small": "text-embedding-3-small" } });
const mistral = await startMistralFake({ apiKey: "mi-key" });
const { cluster } = await startDaprCluster({
  label: "providers-dapr",
  replicas: 2,
  appEnv: {
    AZURE_OPENAI_API_KEY: "az-key",
    AZURE_OPENAI_ENDPOINT: azure.url,
    AZURE_OPENAI_DEPLOYMENTS: '{"gpt-4o": "prod-4o"}',
    MISTRAL_API_KEY: "mi-key",
    MISTRAL_BASE_URL: `${mistral.url}/v1`,
    PROVIDER_TIMEOUT_MS: "5000",
    LOG_LEVEL: "warn",
  },
  ownVectorIndex: true,
  closeAfter: [() => azure.close(), () => mistral.close()],
});

const replicas: Started[] = [];
const first = cluster.replicas[0]!.gatewayUrl;
const user = await signup({ request: (m, p, o) => request(first, m, p, o) }, "providers-dapr");
for (const r of cluster.replicas) {
  replicas.push({ troupe: { port: Number(new URL(r.gatewayUrl).port), request: (m, p, o) => request(r.gatewayUrl, m, p, o) }, key: user.testKey });
}

for (const [i, s] of replicas.entries()) {
  t.test(`replica ${i}: Azure OpenAI and Mistral chat, plain, streamed, tool calls`, async (t) => {
    await plainAndStreamed(t, s, "azure/gpt-4o", "azure");
    await plainAndStreamed(t, s, "mistral-large-latest", "mistral");
    await toolRoundTrip(t, s, "azure/gpt-4o", i === 0);
    await toolRoundTrip(t, s, "mistral-large-latest", i === 1);
  });
  t.test(`replica ${i}: embeddings from both`, async (t) => {
    for (const [model, provider, dims] of [["azure/text-embedding-3-small", "azure", 1536], ["mistral-embed", "mistral", 1024]] as const) {
      const r = await post(s, "/v1/embeddings", { model, routing_strategy: "manual", input: ["a", "b"] });
      t.equal(r.status, 200, r.status === 200 ? "200" : r.text);
      t.match(r.body, { model, provider, dimensions: dims });
      t.equal((field(r.body, "embeddings") as number[][]).length, 2);
    }
  });
}
