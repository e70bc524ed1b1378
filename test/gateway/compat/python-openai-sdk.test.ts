// The official `openai` PyPI package (scripts/python-sdks.sh), unmodified
// but for base_url and api_key, against an embedded Troupe's /openai/v1 over
// real sockets, the provider fakes behind it: chat plain, streamed with
// include_usage, tool-call round trips plain and streamed, each through an
// OpenAI, an Anthropic and a Gemini model; embeddings (the SDK's default
// encoding and float); the models list; speech; transcription of an uploaded
// file; images as URLs and b64_json; videos create → poll → content →
// delete. The scripts in ./python print what the
// SDK returned; this file asserts on it.
import t from "tap";
import { field } from "../../support/troupe.ts";
import { modelsByProvider, startCompatHarness } from "./openai-harness.ts";
import { runPython, withPythonSdk } from "./python-sdk.ts";

t.setTimeout(180_000);
await withPythonSdk(t, startCompatHarness, async (python, h) => {
  const input = { base_url: h.baseURL, api_key: h.user.testKey };

  t.test("chat completions through an OpenAI, an Anthropic and a Gemini model", async (t) => {
    const before = { openai: h.fakes.openai.requests.length, anthropic: h.fakes.anthropic.requests.length, gemini: h.fakes.gemini.requests.length };
    const out = await runPython(python, "openai_chat.py", { ...input, models: Object.values(modelsByProvider) });
    t.match(field(out, "sdk"), /^3\./, "the 3.x SDK ran");
    for (const [provider, model] of Object.entries(modelsByProvider)) {
      t.test(`${provider} (${model})`, async (t) => {
        const r = field(out, model);
        t.match(field(r, "plain"), {
          id: /^chatcmpl-/,
          object: "chat.completion",
          model,
          content: "Echo: hello there",
          finish_reason: "stop",
          tool_calls: null,
          usage: { prompt_tokens: Number, completion_tokens: Number, total_tokens: Number },
        });
        const requestId = field(r, "plain", "request_id");
        t.match(h.usage.filter((u) => u.request_id === requestId), [{ category: "chat", model, provider }], "metered once under the request id the SDK saw");

        t.match(field(r, "stream"), {
          objects: ["chat.completion.chunk"],
          ids: 1,
          text: "Echo: hello stream",
          finish_reason: "stop",
          last_choices: 0,
          usage: { prompt_tokens: Number, completion_tokens: Number, total_tokens: Number },
          usage_before_last: [],
        });
        t.ok(Number(field(r, "stream", "chunks")) >= 4, "role, content, finish, usage chunks");

        t.match(field(r, "tools_plain"), {
          finish_reason: "tool_calls",
          call: { id: String, name: "get_weather", arguments: String },
          arguments: { input: "Weather in Paris?" },
          answer: /^Tool said: .*sunny/,
          answer_finish_reason: "stop",
        });
        t.match(field(r, "tools_stream"), {
          finish_reason: "tool_calls",
          call: { id: String, name: "get_weather" },
          arguments: { input: "Weather in Paris?" },
          answer: /^Tool said: .*sunny/,
        });
        // OpenAI's stream shape: the first delta names the call (index, id, name), the arguments follow in fragments.
        const deltas = field(r, "tools_stream", "deltas") as { index: number; id: string | null; name: string | null; arguments: string | null }[];
        t.match(deltas[0], { index: 0, id: String, name: "get_weather", arguments: "" }, "the first delta: index, id and name");
        t.ok(deltas.length >= 2, "then argument fragments");
        t.ok(deltas.slice(1).every((d) => d.index === 0 && d.id === null && d.name === null && typeof d.arguments === "string"), "fragments carry only index and arguments");
      });
    }
    // Per model: plain, streamed, and two calls in each tool round trip.
    t.equal(h.fakes.openai.requests.length - before.openai, 6, "OpenAI's fake served the OpenAI model's six calls");
    t.equal(h.fakes.anthropic.requests.length - before.anthropic, 6, "Anthropic's fake served Claude's");
    t.equal(h.fakes.gemini.requests.length - before.gemini, 6, "Gemini's fake served Gemini's");
  });

  t.test("embeddings, models, speech, transcription, images", async (t) => {
    const out = await runPython(python, "openai_media.py", input);
    t.match(field(out, "embeddings"), {
      wire_type: "str",
      object: "list",
      model: "text-embedding-3-small",
      count: 2,
      dims: [1536, 1536],
      float_dims: [1536, 1536],
      element_type: "float",
      usage: { prompt_tokens: Number, total_tokens: Number },
      dimensions_256: 256,
    });
    t.ok(Number(field(out, "embeddings", "max_diff")) < 1e-6, "the SDK's default (base64 on the wire) decodes to the float answer");

    const ids = field(out, "models", "ids") as string[];
    t.equal(ids.length, h.troupe.services.router.catalogue.models.length + 3, "every catalogue model and the three routing names");
    for (const id of ["gpt-4.1-mini", "claude-haiku-4-5", "gemini-2.5-flash", "text-embedding-3-small", "local/llama-3.1-8b", "troupe/auto"]) t.ok(ids.includes(id), id);
    t.match(field(out, "models", "retrieved"), { id: "claude-haiku-4-5", object: "model", created: 0, owned_by: "anthropic" });

    t.match(field(out, "speech"), { content_type: "audio/wav", riff: "RIFF", wave: "WAVE" });
    t.ok(Number(field(out, "speech", "bytes")) > 44, "more than a WAV header");
    const text = field(out, "transcription", "text");
    t.match(text, /^[A-Z].+\.$/, "a transcript of the uploaded file");
    t.equal(field(out, "transcription", "text_format"), text, "response_format text: the plain transcript");
    t.ok(h.usage.some((u) => u.category === "audio" && u.model === "simulated-transcribe" && (u.units ?? 0) > 0), "transcription billed by seconds");

    const urls = field(out, "images", "url") as { url: string; status: number; png: unknown }[];
    t.equal(urls.length, 2);
    for (const image of urls) {
      t.match(image.url, new RegExp(`^http://127\\.0\\.0\\.1:${h.troupe.port}/v1/files/file_`), "a Troupe file URL, never a provider's");
      t.match(image, { status: 200, png: ["png", 256, 256] });
    }
    t.match(field(out, "images", "b64_json"), { url: null, png: ["png", 512, 512] });
  });

  t.test("videos: create, poll, download the MP4, delete, then NotFoundError", async (t) => {
    const out = await runPython(python, "openai_videos.py", input);
    t.match(field(out, "created"), { object: "video", status: "queued", model: "simulated-video", seconds: "4" });
    t.match(field(out, "done"), { status: "completed", progress: 100 });
    t.match(field(out, "content"), { content_type: "video/mp4", ftyp: "ftyp" });
    t.ok(Number(field(out, "content", "bytes")) > 1000, "a whole MP4, not a header");
    t.match(field(out, "deleted"), { id: field(out, "created", "id"), object: "video.deleted", deleted: true });
    t.same(field(out, "after_delete"), { class: "NotFoundError", status: 404 }, "the SDK's own class for a deleted video");
    t.ok(h.usage.some((u) => u.category === "video" && u.model === "simulated-video"), "the scene billed as on /v1");
  });
});
