// Bring your own key beyond chat (docs/operations/byok.md): an organization's
// stored OpenAI key goes out on its embeddings, vision, speech, transcription
// (the /v1 route and the OpenAI-compatible upload) and image calls (the Authorization header checked at the fakes) and never
// on another organization's; those calls are marked byok in the ledger and
// billed BYOK_PRICE_FRACTION of the catalogue price (0.25 here, 0 by
// default), while the other organization pays the full price.
import t from "tap";
import type { UsageRecord } from "../../providers/usage.ts";
import { startMediaFake } from "../fakes/media-fakes.ts";
import { startOpenAIFake } from "../fakes/openai-fake.ts";
import { encodeWav } from "../../media/wav.ts";
import { eventually, projectWithLiveKey } from "../support/billing.ts";
import { midMonthClock } from "../support/mid-month-clock.ts";
import { field, signup, startTestTroupe, type TestTroupe } from "../support/troupe.ts";

t.setTimeout(120_000);
const troupeKey = "sk-troupe-own-key-000";
const orgKey = "sk-org-a-secret-1a2b3c4d5e6f7788";

/** Two organizations on one gateway, the first with its own OpenAI key stored. */
async function twoOrganizations(troupe: TestTroupe) {
  const a = await signup(troupe, "byok-cap-a");
  const b = await signup(troupe, "byok-cap-b");
  const pa = await projectWithLiveKey(troupe, a.token, a.orgId);
  const pb = await projectWithLiveKey(troupe, b.token, b.orgId);
  const put = await troupe.request("PUT", `/v1/orgs/${a.orgId}/provider-credentials/openai`, { token: a.token, body: { api_key: orgKey } });
  if (put.status !== 200) throw new Error(`credential: ${put.status} ${put.text}`);
  return { a, b, pa, pb };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

t.test("embeddings and vision: the organization's key at the fake, billed the BYOK fraction", async (t) => {
  const fake = await startOpenAIFake();
  t.teardown(() => fake.close());
  const records: UsageRecord[] = [];
  const troupe = await startTestTroupe(
    { OPENAI_API_KEY: troupeKey, OPENAI_BASE_URL: `${fake.url}/v1`, PROVIDER_MAX_ATTEMPTS: "1", BYOK_PRICE_FRACTION: "0.25" },
    { usage: { record: (r) => void records.push(r) } },
  );
  t.teardown(() => troupe.stop());
  const { a, b, pa, pb } = await twoOrganizations(troupe);
  const embed = (key: string) => troupe.request("POST", "/v1/embeddings", { token: key, body: { model: "text-embedding-3-small", routing_strategy: "manual", input: ["the same words, twice over"] } });
  const vision = (key: string) =>
    troupe.request("POST", "/v1/vision/analyze", {
      token: key,
      body: { model: "gpt-4o-mini", routing_strategy: "manual", prompt: "what is this?", image_url: "data:image/png;base64,iVBORw0KGgo=" },
    });
  fake.requests.length = 0;
  const answers = [await embed(pa.liveKey), await embed(pb.liveKey), await vision(pa.liveKey), await vision(pb.liveKey)];
  t.same(answers.map((r) => r.status), [200, 200, 200, 200], answers.map((r) => r.text.slice(0, 200)).join(" | "));
  t.notOk(answers[2]!.text.includes("byok"), "the vision answer keeps its shape");
  t.same(
    fake.requests.map((r) => [r.path, r.headers.authorization]),
    [
      ["/v1/embeddings", `Bearer ${orgKey}`],
      ["/v1/embeddings", `Bearer ${troupeKey}`],
      ["/v1/chat/completions", `Bearer ${orgKey}`],
      ["/v1/chat/completions", `Bearer ${troupeKey}`],
    ],
    "A's calls carry A's key; B's never do",
  );
  await settle();
  for (const category of ["embeddings", "vision"]) {
    const ofA = records.find((r) => r.organization_id === a.orgId && r.category === category);
    const ofB = records.find((r) => r.organization_id === b.orgId && r.category === category);
    t.equal(ofA?.byok, true, `${category}: A's record is byok`);
    t.equal(ofB?.byok, undefined, `${category}: B's is not`);
    t.ok((ofB?.cost_nanos ?? 0) > 0, `${category}: B pays the catalogue price`);
    t.equal(ofA?.cost_nanos, Math.round((ofB?.cost_nanos ?? 0) * 0.25), `${category}: A pays a quarter of it`);
    t.equal(ofA?.cost_usd, (ofA?.cost_nanos ?? 0) / 1e9, `${category}: cost_usd and cost_nanos agree`);
  }
});

t.test("speech, transcription and images: the organization's key at the media fake, billed 0 by default", async (t) => {
  const media = await startMediaFake({ openaiKey: [troupeKey, orgKey] });
  t.teardown(() => media.close());
  const records: UsageRecord[] = [];
  const troupe = await startTestTroupe(
    { OPENAI_API_KEY: troupeKey, OPENAI_BASE_URL: `${media.url}/v1`, PROVIDER_MAX_ATTEMPTS: "1", OUTBOUND_ALLOW_HOSTS: "127.0.0.1" },
    { usage: { record: (r) => void records.push(r) } },
  );
  t.teardown(() => troupe.stop());
  const { a, b, pa, pb } = await twoOrganizations(troupe);
  const speak = (key: string) => troupe.request("POST", "/v1/audio/speech", { token: key, body: { model: "tts-1", routing_strategy: "manual", voice: "alloy", text: "hello from a stored key" } });
  const draw = (key: string) => troupe.request("POST", "/v1/images/generations", { token: key, body: { model: "dall-e-3", routing_strategy: "manual", prompt: "a lighthouse", size: "1024x1024", n: 1 } });
  media.calls.length = 0;
  const spoken = [await speak(pa.liveKey), await speak(pb.liveKey)];
  const drawn = [await draw(pa.liveKey), await draw(pb.liveKey)];
  t.same([...spoken, ...drawn].map((r) => r.status), [200, 200, 200, 200], [...spoken, ...drawn].map((r) => r.text.slice(0, 200)).join(" | "));
  // The transcription reads A's own stored speech file (a URL of this Troupe), then B's.
  const heard = [];
  for (const [key, answer] of [[pa.liveKey, spoken[0]!], [pb.liveKey, spoken[1]!]] as const) {
    const audioUrl = String((answer.body as Record<string, unknown>)["audio"]);
    heard.push(await troupe.request("POST", "/v1/audio/transcriptions", { token: key, body: { model: "whisper-1", routing_strategy: "manual", audio_url: audioUrl } }));
  }
  t.same(heard.map((r) => r.status), [200, 200], heard.map((r) => r.text.slice(0, 200)).join(" | "));
  t.same(
    media.calls.map((c) => [c.path, c.headers.authorization]),
    [
      ["/v1/audio/speech", `Bearer ${orgKey}`],
      ["/v1/audio/speech", `Bearer ${troupeKey}`],
      ["/v1/images/generations", `Bearer ${orgKey}`],
      ["/v1/images/generations", `Bearer ${troupeKey}`],
      ["/v1/audio/transcriptions", `Bearer ${orgKey}`],
      ["/v1/audio/transcriptions", `Bearer ${troupeKey}`],
    ],
    "A's calls carry A's key; B's never do",
  );
  await settle();
  for (const model of ["tts-1", "dall-e-3", "whisper-1"]) {
    const ofA = records.find((r) => r.organization_id === a.orgId && r.model === model);
    const ofB = records.find((r) => r.organization_id === b.orgId && r.model === model);
    t.match(ofA, { byok: true, cost_usd: 0, cost_nanos: 0 }, `${model}: A's record is byok, billed 0`);
    t.equal(ofB?.byok, undefined, `${model}: B's is not byok`);
    t.ok((ofB?.cost_nanos ?? 0) > 0, `${model}: B pays the catalogue price`);
  }
});

t.test("the OpenAI-compatible transcription upload: the organization's key at the media fake, its ledger row byok", async (t) => {
  const media = await startMediaFake({ openaiKey: [troupeKey, orgKey] });
  t.teardown(() => media.close());
  // The durable ledger (no usage override): the usage report reads the rows the calls wrote.
  const troupe = await startTestTroupe({ OPENAI_API_KEY: troupeKey, OPENAI_BASE_URL: `${media.url}/v1`, PROVIDER_MAX_ATTEMPTS: "1" }, { clock: midMonthClock() });
  t.teardown(() => troupe.stop());
  const { pa, pb, a, b } = await twoOrganizations(troupe);
  const wav = encodeWav(new Float32Array(8_000), 8_000);
  const transcribe = async (key: string) => {
    const form = new FormData();
    form.append("model", "whisper-1");
    form.append("file", new Blob([wav], { type: "audio/wav" }), "speech.wav");
    const res = await fetch(`http://127.0.0.1:${troupe.port}/openai/v1/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
    return { status: res.status, text: await res.text() };
  };
  media.calls.length = 0;
  const heard = [await transcribe(pa.liveKey), await transcribe(pb.liveKey)];
  t.same(heard.map((r) => r.status), [200, 200], heard.map((r) => r.text.slice(0, 200)).join(" | "));
  t.same(heard.map((r) => JSON.parse(r.text) as unknown), [{ text: media.transcript }, { text: media.transcript }]);
  t.same(
    media.calls.map((c) => [c.path, c.headers.authorization]),
    [
      ["/v1/audio/transcriptions", `Bearer ${orgKey}`],
      ["/v1/audio/transcriptions", `Bearer ${troupeKey}`],
    ],
    "A's upload carries A's key; B's carries Troupe's",
  );
  type Group = { key: string; live: { calls: number; cost_nanos: number } };
  const groupsOf = async (session: string, projectId: string) =>
    field(
      (
        await eventually(
          () => troupe.request("GET", `/v1/projects/${projectId}/usage?group_by=byok`, { token: session }),
          (r) => (field(r.body, "groups") as Group[] | undefined)?.some((g) => g.live.calls === 1) === true,
        )
      ).body,
      "groups",
    ) as Group[];
  t.match(await groupsOf(a.token, pa.projectId), [{ key: "byok", live: { calls: 1, cost_nanos: 0 } }], "A's transcription: the byok row, billed 0");
  const ofB = await groupsOf(b.token, pb.projectId);
  t.match(ofB, [{ key: "troupe", live: { calls: 1 } }], "B's: Troupe's key");
  t.ok((ofB[0]?.live.cost_nanos ?? 0) > 0, "B pays the catalogue price");
});
