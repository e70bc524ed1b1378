"""litellm.responses() as a client of Troupe's /openai/v1
(api_base=<troupe>/openai/v1, model="openai/<id>"), unmodified otherwise:
per model, a plain response and a streamed one. Reads {"base_url",
"api_key", "models": [...]} on stdin; prints one JSON object of what
litellm returned. Telemetry and the remote model-cost map are off."""

import json
import os
import sys

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["LITELLM_TELEMETRY"] = "False"

import litellm  # noqa: E402

litellm.telemetry = False
config = json.load(sys.stdin)
common = {"api_base": config["base_url"], "api_key": config["api_key"], "num_retries": 0}


def case(name):
    model = "openai/" + name
    plain = litellm.responses(model=model, input="hello there", **common)
    types, deltas, completed = [], [], None
    for event in litellm.responses(model=model, input="hello stream", stream=True, **common):
        kind = getattr(event, "type", None)
        types.append(str(kind.value if hasattr(kind, "value") else kind))
        if types[-1] == "response.output_text.delta":
            deltas.append(event.delta)
        if types[-1] == "response.completed":
            completed = event.response
    text = "".join(c.text for o in plain.output if getattr(o, "type", None) == "message" for c in o.content if getattr(c, "type", None) == "output_text")
    return {
        "plain": {"id": plain.id, "status": plain.status, "text": text,
                  "input_tokens": plain.usage.input_tokens, "output_tokens": plain.usage.output_tokens},
        "stream_types": types,
        "deltas": deltas,
        "completed_id": getattr(completed, "id", None),
    }


print(json.dumps({name: case(name) for name in config["models"]}))
