"""Schemathesis hooks for `npm run fuzz`: the request rules JSON Schema cannot state.

The OpenAPI document states every rule a schema can (types, enums, patterns,
lengths, oneOf by role, if/then). What remains relates one part of a body to
another and is refused by the server with a 400 that names the field:

- a `tool` message answers a tool call of an earlier assistant message, once;
  tool call ids are unique; at least one message is not a system message;
- tool names are unique, and agents' tools avoid the built-in names;
- `tool_choice` other than auto/none needs tools, and names a declared one;
- an embedding model without custom dimensions takes only its own dimension;
- a speech model has its own voices, an image model its own sizes and n;
- a video job's `image_url` must be downloadable too (FUZZ_IMAGE_URL), and a
  video model that only animates images needs one;
- a transcription's `audio_url` must be downloadable (the schema says it is
  a URL; whether something answers there it cannot): it is pointed at an
  audio file the fuzzed Troupe stored (scripts/fuzz.sh, FUZZ_AUDIO_URL);
- an uploaded transcription `file` must be audio by its first bytes (WAV,
  MP3, FLAC, Ogg, MP4 or WebM; media/sniff.ts): a generated file is replaced
  by a short silent WAV;
- a webhook's `url` must resolve to an address the outbound policy allows:
  it is pointed at the fuzzed Troupe itself (same origin as FUZZ_AUDIO_URL);
- on the OpenAI-compatible mount, a tool call's `arguments` is a JSON object
  in a string, a JSON `response_format` needs a model with json_output, and
  a troupe/<strategy> name cannot be routed `manual`.

Positive (schema-valid) generated bodies are brought within these rules
before they are sent; negative ones are left alone, so what they break stays
broken. Keep in step with
providers/validate-chat.ts, gateway/routes/agents.ts and the catalogue.
"""

import copy
import io
import json
import os
import wave

import schemathesis
from schemathesis.generation import GenerationMode

# actors/conversation/builtin-tools.ts: reservedToolNames.
RESERVED_TOOL_NAMES = {"search_memory", "remember", "generate_video"}
# providers/catalogue.json: embedding models without custom_dimensions, and their dimension.
FIXED_DIMENSIONS = {"embed-english-v3.0": 1024}


def _unique_tool_names(tools, reserved=frozenset()):
    if not isinstance(tools, list):
        return
    seen = set(reserved)
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        name = tool["name"]
        if name in seen:
            suffix = f"_{i}"
            name = (name[: 64 - len(suffix)] + suffix) if name else f"t{suffix}"
            tool["name"] = name
        seen.add(name)


def _tool_names(tools):
    if not isinstance(tools, list):
        return []
    return [t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]


def _chat(body):
    messages = body.get("messages")
    if isinstance(messages, list):
        open_calls, seen = [], set()
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                continue
            calls = m.get("tool_calls")
            if m.get("role") == "assistant" and isinstance(calls, list):
                for j, call in enumerate(calls):
                    if isinstance(call, dict) and isinstance(call.get("id"), str):
                        if call["id"] in seen:
                            call["id"] = f"{call['id']}_{i}_{j}"
                        seen.add(call["id"])
                        open_calls.append(call["id"])
            if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
                if m["tool_call_id"] in open_calls:
                    open_calls.remove(m["tool_call_id"])
                elif open_calls:
                    m["tool_call_id"] = open_calls.pop(0)
                else:
                    # Nothing to answer: the same text as a user message.
                    del m["tool_call_id"]
                    m["role"] = "user"
        if messages and all(isinstance(m, dict) and m.get("role") in ("system", "developer") for m in messages):
            messages.append({"role": "user", "content": "Hello"})
    _unique_tool_names(body.get("tools"))
    names = _tool_names(body.get("tools"))
    choice = body.get("tool_choice")
    if choice == "required" and not names:
        body["tool_choice"] = "auto"
    elif isinstance(choice, dict):
        target = choice.get("function") if choice.get("type") == "function" else choice
        if isinstance(target, dict) and isinstance(target.get("name"), str) and target["name"] not in names:
            if names:
                target["name"] = names[0]
            else:
                body["tool_choice"] = "auto"


def _anthropic(body):
    """The /anthropic mount's bodies, within the same conversation rules.

    A model of the catalogue (any other is a documented 404); image blocks
    only in user turns, tool_use only in assistant turns, tool_result only in
    user turns answering an earlier tool_use once (and without images); tool
    names unique; a tool_choice of any/tool needs tools and names a declared one.
    """
    if isinstance(body.get("model"), str):
        body["model"] = "simulated-chat"
    open_calls, seen = [], set()
    for i, m in enumerate(body.get("messages") or []):
        if not isinstance(m, dict) or not isinstance(m.get("content"), list):
            continue
        kept = []
        for j, block in enumerate(m["content"]):
            kind = block.get("type") if isinstance(block, dict) else None
            if m.get("role") == "assistant":
                if kind in ("image", "tool_result"):
                    continue
                if kind == "tool_use" and isinstance(block.get("id"), str):
                    if block["id"] in seen:
                        block["id"] = f"{block['id']}_{i}_{j}"
                    seen.add(block["id"])
                    open_calls.append(block["id"])
            else:
                if kind == "tool_use":
                    continue
                if kind == "tool_result":
                    if block.get("tool_use_id") in open_calls:
                        open_calls.remove(block["tool_use_id"])
                    elif open_calls:
                        block["tool_use_id"] = open_calls.pop(0)
                    else:
                        continue
                    if isinstance(block.get("content"), list):
                        block["content"] = [b for b in block["content"] if isinstance(b, dict) and b.get("type") != "image"]
            kept.append(block)
        m["content"] = kept
    _unique_tool_names(body.get("tools"))
    names = _tool_names(body.get("tools"))
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        if not names:
            body["tool_choice"] = {"type": "auto"}
        elif choice.get("type") == "tool" and choice.get("name") not in names:
            choice["name"] = names[0]


def _embeddings(body):
    model = body.get("model")
    fixed = FIXED_DIMENSIONS.get(model) if isinstance(model, str) else None
    if fixed is not None and isinstance(body.get("dimensions"), int) and body["dimensions"] != fixed:
        body["dimensions"] = fixed


def _models():
    """GET /v1/models as scripts/fuzz.sh saved it: id -> capabilities."""
    path = os.environ.get("FUZZ_MODELS_FILE")
    if not path:
        return {}
    with open(path, encoding="utf-8") as f:
        return {m["id"]: m.get("capabilities", {}) for m in json.load(f)["data"]}


MODELS = _models()


def _catalogue():
    """GET /v1/models: id -> (category, available)."""
    path = os.environ.get("FUZZ_MODELS_FILE")
    if not path:
        return {}
    with open(path, encoding="utf-8") as f:
        return {m["id"]: (m.get("category"), m.get("available", True)) for m in json.load(f)["data"]}


CATALOGUE = _catalogue()


def _servable_model(body):
    """Which providers this Troupe configured is a deployment fact no schema states: the
    fuzz server configures none, and a model of an unconfigured provider is the documented
    400 naming the setting to set. A valid request names a model it can serve: the first
    available model of the same category (the simulated one here)."""
    model = body.get("model")
    if not isinstance(model, str) or model not in CATALOGUE or CATALOGUE[model][1]:
        return
    category = CATALOGUE[model][0]
    for other, (other_category, available) in CATALOGUE.items():
        if available and other_category == category:
            body["model"] = other
            return


def _offered(capability):
    """What the available models offer of a capability (voices, sizes): with no model named,
    the router picks by it, and one no configured provider has is the documented 400 naming
    the field and the provider to configure, a deployment fact no schema states."""
    offered = []
    for model, caps in MODELS.items():
        if CATALOGUE.get(model, (None, True))[1]:
            offered += [v for v in caps.get(capability) or [] if v not in offered]
    return offered


def _speech(body):
    named = isinstance(body.get("model"), str)
    voices = MODELS.get(body.get("model"), {}).get("voices") if named else _offered("voices")
    if voices and body.get("voice") not in voices:
        body["voice"] = voices[0]


def _images(body):
    named = isinstance(body.get("model"), str)
    caps = MODELS.get(body.get("model"), {}) if named else {}
    sizes = caps.get("sizes") if named else _offered("sizes")
    if sizes and body.get("size", "1024x1024") not in sizes:
        body["size"] = sizes[0]
    n_max = caps.get("n_max", 1)
    if caps and isinstance(body.get("n"), int) and body["n"] > n_max:
        body["n"] = n_max


def _transcription(body):
    if os.environ.get("FUZZ_AUDIO_URL"):
        body["audio_url"] = os.environ["FUZZ_AUDIO_URL"]


def _video(body):
    # An image_url must be downloadable, and a model that only animates images needs one.
    caps = MODELS.get(body.get("model"), {}) if isinstance(body.get("model"), str) else {}
    wants_image = body.get("image_url") is not None or caps.get("image_input") == "required"
    if wants_image and os.environ.get("FUZZ_IMAGE_URL"):
        body["image_url"] = os.environ["FUZZ_IMAGE_URL"]


def _webhook(body):
    # A webhook URL must resolve to an address the outbound policy allows (checked
    # at creation): point it at the fuzzed Troupe itself, which OUTBOUND_ALLOW_HOSTS allows.
    if os.environ.get("FUZZ_AUDIO_URL"):
        origin = "/".join(os.environ["FUZZ_AUDIO_URL"].split("/")[:3])
        body["url"] = origin + "/fuzz-webhook-receiver"


def _openai_chat(body):
    # OpenAI's tool calls carry their arguments as a JSON object in a string.
    for m in body.get("messages") or []:
        if isinstance(m, dict) and isinstance(m.get("tool_calls"), list):
            for call in m["tool_calls"]:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict):
                    try:
                        ok = isinstance(json.loads(fn.get("arguments", "")), dict)
                    except (TypeError, ValueError):
                        ok = False
                    if not ok:
                        fn["arguments"] = "{}"
    _chat(body)
    fmt = body.get("response_format")
    model = body.get("model")
    if isinstance(fmt, dict) and fmt.get("type") != "text" and isinstance(model, str) and not MODELS.get(model, {}).get("json_output"):
        body["response_format"] = {"type": "text"}


def _silent_wav():
    """0.1 s of 16 kHz mono silence: the smallest upload the audio check takes."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\x00\x00" * 1600)
    return out.getvalue()


def _transcription_upload(body):
    if "file" in body:
        body["file"] = _silent_wav()


def _openai_routed(fix, first_voice=False, image=False):
    """The mount's troupe/<strategy> names choose among the simulated models here: give them what those take."""
    def apply(body):
        model = body.get("model", "troupe/auto")
        if isinstance(model, str) and model.startswith("troupe/"):
            # A routing name is not a model: routing_strategy manual needs one.
            if body.get("routing_strategy") == "manual":
                del body["routing_strategy"]
            if first_voice:
                body["voice"] = "alto"
            elif image:
                body["size"] = "1024x1024"
        fix(body)
    return apply


def _api_key(body):
    # A live key can only be made in a production environment, and whether the
    # environment in the path is one is state no schema states (the fuzzer's
    # stateful phase makes non-production ones): valid requests make test keys.
    if body.get("live") is True:
        body["live"] = False


def _agent(body):
    _unique_tool_names(body.get("tools"), RESERVED_TOOL_NAMES)


def _cache_settings(body):
    # semantic_embedding_model names an embedding model of the catalogue with
    # known dimensions (the vector index needs them), which the document states
    # in words, not as a schema: valid requests name one from GET /v1/models.
    model = body.get("semantic_embedding_model")
    if not isinstance(model, str):
        return
    embedding = [m for m, (category, _) in CATALOGUE.items() if category == "embedding" and MODELS.get(m, {}).get("dimensions")]
    if model not in embedding and embedding:
        body["semantic_embedding_model"] = embedding[0]


FIXES = {
    ("PATCH", "/v1/projects/{project_id}/cache"): _cache_settings,
    ("POST", "/v1/chat/completions"): _chat,
    ("POST", "/anthropic/v1/messages"): _anthropic,
    ("POST", "/anthropic/v1/messages/count_tokens"): _anthropic,
    ("POST", "/v1/embeddings"): _embeddings,
    ("POST", "/v1/agents/conversations"): _agent,
    ("POST", "/v1/audio/speech"): _speech,
    ("POST", "/v1/audio/transcriptions"): _transcription,
    ("POST", "/v1/images/generations"): _images,
    ("POST", "/v1/video/generate"): _video,
    ("POST", "/v1/webhooks"): _webhook,
    ("POST", "/v1/environments/{environment_id}/api-keys"): _api_key,
    ("POST", "/openai/v1/chat/completions"): _openai_routed(_openai_chat),
    ("POST", "/openai/v1/embeddings"): _openai_routed(_embeddings),
    ("POST", "/openai/v1/images/generations"): _openai_routed(_images, image=True),
    ("POST", "/openai/v1/audio/speech"): _openai_routed(_speech, first_voice=True),
    ("POST", "/openai/v1/audio/transcriptions"): _openai_routed(_transcription_upload),
    # A generated file is not a PNG, JPEG or WebP image (a content rule the
    # document cannot state): valid cases are text-to-video.
    ("POST", "/openai/v1/videos"): _openai_routed(lambda body: body.pop("input_reference", None)),
}


@schemathesis.hook
def map_case(context, case):
    fix = FIXES.get((case.operation.method.upper(), case.operation.path))
    meta = case.meta
    positive = meta is not None and meta.generation.mode == GenerationMode.POSITIVE
    if positive and isinstance(case.body, dict) and case.operation.method.upper() in ("POST", "PATCH"):
        # A fixed copy assigned whole: Schemathesis tracks in-place edits per
        # key and would restore a deleted key from the generated value.
        body = copy.deepcopy(case.body)
        _servable_model(body)
        if fix is not None:
            fix(body)
        if body != case.body:
            case.body = body
    return case
