"""The official `openai` PyPI SDK, unmodified but for base_url and api_key,
against Troupe's /openai/v1/responses: per model, a plain response, a
stream, a function tool round trip over previous_response_id, then
retrieve, input_items.list and delete. Reads {"base_url", "api_key",
"models": [...]} on stdin; prints one JSON object of what the SDK returned,
which the tap test asserts on."""

import json
import sys

import openai

config = json.load(sys.stdin)
client = openai.OpenAI(base_url=config["base_url"], api_key=config["api_key"], max_retries=0)
weather = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]},
    "strict": False,
}


def status_of(call):
    try:
        call()
    except openai.APIStatusError as e:
        return e.status_code
    return None


def case(model):
    plain = client.responses.create(model=model, input="hello there")
    events = [e.type for e in client.responses.create(model=model, input="hello stream", stream=True)]
    with client.responses.stream(model=model, input="hello helper") as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    first = client.responses.create(model=model, input="Weather in Paris?", tools=[weather], tool_choice="required")
    call = next(i for i in first.output if i.type == "function_call")
    second = client.responses.create(
        model=model,
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21C"}],
        tools=[weather],
    )
    items = client.responses.input_items.list(second.id)
    retrieved = client.responses.retrieve(second.id)
    client.responses.delete(second.id)
    return {
        "plain": {"id": plain.id, "status": plain.status, "output_text": plain.output_text, "usage": plain.usage.model_dump()},
        "stream_events": events,
        "helper_text": final.output_text,
        "call": {"name": call.name, "arguments": json.loads(call.arguments), "id": call.id},
        "second": {"output_text": second.output_text, "previous_response_id": second.previous_response_id},
        "items": [i.type for i in items.data],
        "retrieved_id": retrieved.id,
        "after_delete": status_of(lambda: client.responses.retrieve(second.id)),
    }


print(json.dumps({"sdk": openai.__version__, **{model: case(model) for model in config["models"]}}))
