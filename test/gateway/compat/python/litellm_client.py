"""litellm as a client of Troupe's /openai/v1 (api_base=<troupe>/openai/v1,
model="openai/<id>"), unmodified otherwise: a completion, a streamed one, a
tool round trip whose tool message carries `name` (litellm's documented
pattern), and litellm.embedding. Reads {"base_url", "api_key", "model",
"embedding_model"} on stdin; prints one JSON object of what litellm
returned. Telemetry and the remote model-cost map are off: nothing leaves
the machine but calls to the local gateway."""

import json
import os
import sys

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["LITELLM_TELEMETRY"] = "False"

import litellm  # noqa: E402

litellm.telemetry = False
config = json.load(sys.stdin)
common = {"api_base": config["base_url"], "api_key": config["api_key"], "num_retries": 0}
model = "openai/" + config["model"]
tools = [{
    "type": "function",
    "function": {"name": "get_weather", "description": "Weather for a city",
                 "parameters": {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}},
}]

plain = litellm.completion(model=model, messages=[{"role": "user", "content": "hello there"}], **common)
deltas = []
for chunk in litellm.completion(model=model, messages=[{"role": "user", "content": "hello there"}], stream=True, **common):
    deltas.append(chunk.choices[0].delta.content or "")

question = {"role": "user", "content": "weather in Paris?"}
first = litellm.completion(model=model, messages=[question], tools=tools, **common)
call = first.choices[0].message.tool_calls[0]
messages = [question, first.choices[0].message.model_dump(), {
    "role": "tool", "tool_call_id": call.id, "name": call.function.name, "content": json.dumps({"temp": 21}),
}]
second = litellm.completion(model=model, messages=messages, tools=tools, **common)

embedded = litellm.embedding(model="openai/" + config["embedding_model"], input=["hello", "world"], **common)

print(json.dumps({
    "plain": {"content": plain.choices[0].message.content, "finish_reason": plain.choices[0].finish_reason,
              "prompt_tokens": plain.usage.prompt_tokens},
    "stream": "".join(deltas),
    "tool_call": {"name": call.function.name, "arguments": json.loads(call.function.arguments)},
    "after_tool": {"content": second.choices[0].message.content, "finish_reason": second.choices[0].finish_reason},
    "embeddings": [len(d["embedding"]) for d in embedded.data],
}))
