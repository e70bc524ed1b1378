"""The official `google-genai` PyPI SDK, unmodified but for api_key and
http_options base_url, against Troupe's /gemini mount: per model,
generate_content, generate_content_stream, a function-call round trip and
count_tokens; embed_content on an embedding model; a bad key caught as the
SDK's errors.APIError. Reads {"base_url", "key", "models": [...],
"embedding_model"} on stdin; prints one JSON object of what the SDK
returned."""

import json
import sys

import google.genai
from google.genai import errors, types

config = json.load(sys.stdin)
client = google.genai.Client(api_key=config["key"], http_options={"base_url": config["base_url"]})
weather = types.FunctionDeclaration(
    name="get_weather",
    description="The weather in a city",
    parameters_json_schema={"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]},
)
tool_config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[weather])])


def plain(model):
    r = client.models.generate_content(model=model, contents="hello there")
    return {"text": r.text, "model_version": r.model_version, "finish_reason": r.candidates[0].finish_reason.value, "output_tokens": r.usage_metadata.candidates_token_count}


def stream(model):
    fragments = [c.text for c in client.models.generate_content_stream(model=model, contents="hello stream") if c.text]
    return {"fragments": fragments}


def tools(model):
    ask = types.Content(role="user", parts=[types.Part(text="What is the weather in Paris?")])
    first = client.models.generate_content(model=model, contents=[ask], config=tool_config)
    call = first.function_calls[0]
    reply = types.Part.from_function_response(name=call.name, response={"result": "sunny, 24 °C"})
    reply.function_response.id = call.id
    answer = client.models.generate_content(model=model, contents=[ask, first.candidates[0].content, types.Content(role="user", parts=[reply])], config=tool_config)
    return {"call": {"name": call.name, "args": call.args}, "answer": answer.text}


def count(model):
    return client.models.count_tokens(model=model, contents="hello there").total_tokens


def failure(call):
    try:
        call()
    except errors.APIError as e:
        return {"class": type(e).__name__, "code": e.code, "status": e.status, "message": e.message}
    return {"class": None}


out = {"sdk": google.genai.__version__}
for model in config["models"]:
    out[model] = {"plain": plain(model), "stream": stream(model), "tools": tools(model), "count": count(model)}
embedded = client.models.embed_content(model=config["embedding_model"], contents=["a", "b"], config=types.EmbedContentConfig(output_dimensionality=32))
out["embed"] = [len(e.values) for e in embedded.embeddings]
bad = google.genai.Client(api_key="tr_live_not-a-key", http_options={"base_url": config["base_url"]})
out["bad_key"] = failure(lambda: bad.models.generate_content(model=config["models"][0], contents="x"))
out["unknown_model"] = failure(lambda: client.models.generate_content(model="no-such-model", contents="x"))
print(json.dumps(out))
