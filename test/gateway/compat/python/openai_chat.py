"""The official `openai` PyPI SDK, unmodified but for base_url and api_key,
against Troupe's /openai/v1 chat completions: per model, a plain answer, a
stream with include_usage, and a tool-call round trip plain and streamed.
Reads {"base_url", "api_key", "models": [...]} on stdin; prints one JSON
object of what the SDK returned, which the tap test asserts on."""

import json
import sys

import openai
import sdk_results

config = json.load(sys.stdin)
client = openai.OpenAI(base_url=config["base_url"], api_key=config["api_key"], max_retries=0)
weather = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]},
    },
}


def plain(model):
    raw = client.chat.completions.with_raw_response.create(model=model, messages=[{"role": "user", "content": "hello there"}])
    r = raw.parse()
    return {
        "id": r.id,
        "object": r.object,
        "model": r.model,
        "content": r.choices[0].message.content,
        "finish_reason": r.choices[0].finish_reason,
        "tool_calls": r.choices[0].message.tool_calls,
        "usage": r.usage.model_dump(include={"prompt_tokens", "completion_tokens", "total_tokens"}),
        "request_id": raw.headers.get("x-request-id"),
    }


def streamed(model):
    stream = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "hello stream"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    return {
        "chunks": len(chunks),
        "objects": sorted({c.object for c in chunks}),
        "ids": len({c.id for c in chunks}),
        "text": "".join(c.choices[0].delta.content or "" for c in chunks if c.choices),
        "finish_reason": chunks[-2].choices[0].finish_reason,
        "last_choices": len(chunks[-1].choices),
        "usage": chunks[-1].usage.model_dump(include={"prompt_tokens", "completion_tokens", "total_tokens"}),
        "usage_before_last": [c.usage for c in chunks[:-1] if c.usage is not None],
    }


def tool_round_trip(model, stream):
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    out = {}
    if stream:
        # Accumulated by index, as OpenAI's own examples do: the first delta of a
        # call carries its id and name, the arguments arrive in fragments after it.
        calls, deltas, finish = {}, [], None
        for chunk in client.chat.completions.create(model=model, messages=messages, tools=[weather], stream=True):
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            finish = choice.finish_reason or finish
            for d in choice.delta.tool_calls or []:
                deltas.append({"index": d.index, "id": d.id, "name": d.function.name if d.function else None, "arguments": d.function.arguments if d.function else None})
                call = calls.setdefault(d.index, {"id": None, "name": None, "arguments": ""})
                call["id"] = d.id or call["id"]
                if d.function and d.function.name:
                    call["name"] = d.function.name
                if d.function and d.function.arguments:
                    call["arguments"] += d.function.arguments
        out["deltas"] = deltas
        out["finish_reason"] = finish
        call = calls[0]
    else:
        r = client.chat.completions.create(model=model, messages=messages, tools=[weather], tool_choice="auto")
        out["finish_reason"] = r.choices[0].finish_reason
        c = r.choices[0].message.tool_calls[0]
        call = {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
    out["call"] = call
    out["arguments"] = json.loads(call["arguments"])
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [{"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]},
        {"role": "tool", "tool_call_id": call["id"], "content": "sunny"},
    ]
    if stream:
        out["answer"] = "".join(
            c.choices[0].delta.content or "" for c in client.chat.completions.create(model=model, messages=messages, tools=[weather], stream=True) if c.choices
        )
    else:
        r = client.chat.completions.create(model=model, messages=messages, tools=[weather])
        out["answer"] = r.choices[0].message.content
        out["answer_finish_reason"] = r.choices[0].finish_reason
    return out


result = {"sdk": openai.__version__, **sdk_results.chat_cases(config["models"], plain, streamed, tool_round_trip)}
print(json.dumps(result))
