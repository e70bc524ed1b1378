"""The official `anthropic` PyPI SDK, unmodified but for base_url and
api_key, against Troupe's /anthropic mount: per model, messages plain and
streamed and a tool-use round trip plain and streamed; count_tokens; and the
refusals, each caught as the SDK's own exception class. Reads {"base_url",
"models": [...], "keys": {...}} on stdin; prints one JSON object of what the
SDK returned."""

import json
import sys

import anthropic
import sdk_results

config = json.load(sys.stdin)
keys = config["keys"]
client = anthropic.Anthropic(base_url=config["base_url"], api_key=keys["default"], max_retries=0)
weather = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]},
}


def text_of(message):
    return "".join(b.text for b in message.content if b.type == "text")


def plain(model):
    m = client.messages.create(model=model, max_tokens=100, messages=[{"role": "user", "content": "hello there"}])
    return {"id": m.id, "type": m.type, "role": m.role, "model": m.model, "text": text_of(m), "stop_reason": m.stop_reason, "usage": m.usage.model_dump(include={"input_tokens", "output_tokens"})}


def streamed(model):
    with client.messages.stream(model=model, max_tokens=100, messages=[{"role": "user", "content": "hello stream"}]) as stream:
        fragments = list(stream.text_stream)
        m = stream.get_final_message()
    return {"fragments": fragments, "text": text_of(m), "stop_reason": m.stop_reason, "model": m.model, "output_tokens": m.usage.output_tokens}


def tool_round_trip(model, stream):
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    json_deltas = []

    def ask():
        if not stream:
            return client.messages.create(model=model, max_tokens=200, tools=[weather], messages=messages)
        with client.messages.stream(model=model, max_tokens=200, tools=[weather], messages=messages) as s:
            for event in s:
                if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                    json_deltas.append(event.delta.partial_json)
            return s.get_final_message()

    first = ask()
    uses = [b for b in first.content if b.type == "tool_use"]
    # The assistant turn goes back as the SDK returned it, then the result.
    messages.append({"role": "assistant", "content": first.content})
    messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": "sunny, 24 °C"}]})
    second = ask()
    return {
        "stop_reason": first.stop_reason,
        "uses": [{"id": u.id, "name": u.name, "input": u.input} for u in uses],
        "input_json_deltas": json_deltas,
        "answer": text_of(second),
        "answer_stop_reason": second.stop_reason,
    }


def caught(call):
    return sdk_results.caught(anthropic, call, ("AuthenticationError", "PermissionDeniedError", "NotFoundError", "PaymentRequiredError", "RateLimitError"))


def with_key(key):
    return anthropic.Anthropic(base_url=config["base_url"], api_key=key, max_retries=0)


hello = {"model": config["models"][0], "max_tokens": 50, "messages": [{"role": "user", "content": "hello there"}]}
result = {"sdk": anthropic.__version__, **sdk_results.chat_cases(config["models"], plain, streamed, tool_round_trip)}
short = client.messages.count_tokens(model=config["models"][0], messages=[{"role": "user", "content": "hi"}])
long = client.messages.count_tokens(model=config["models"][0], tools=[weather], messages=[{"role": "user", "content": "hi there, a much longer question"}])
result["count_tokens"] = {"short": short.input_tokens, "long": long.input_tokens}
result["unauthorized"] = caught(lambda: with_key("trp_live_notakeyatall").messages.create(**hello))
result["scope"] = caught(lambda: with_key(keys["images_only"]).messages.create(**hello))
result["model"] = caught(lambda: client.messages.create(**{**hello, "model": "claude-nonexistent-9"}))
broke = with_key(keys["hard_budget"])
broke.messages.create(**hello)  # admitted while nothing is spent; it spends past the limit
result["budget"] = caught(lambda: broke.messages.create(**hello))
limited = with_key(keys["one_per_minute"])
limited.messages.create(**hello)
result["rate_limit"] = caught(lambda: limited.messages.create(**hello))
print(json.dumps(result))
