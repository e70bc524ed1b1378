"""Refusals through the official `openai` PyPI SDK, each caught as the SDK's
own exception class: 401 (bad key), 403 (key scoped to another category),
404 (unknown model), 429 (rate limit; and a hard budget, OpenAI's
insufficient_quota). Reads {"base_url", "keys": {...}} on stdin; prints one
JSON object per case: the class that was caught and what it carried."""

import json
import sys
import time

import openai
import sdk_results

config = json.load(sys.stdin)
keys = config["keys"]
hello = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hello there"}]}


def client(key, retries=0):
    return openai.OpenAI(base_url=config["base_url"], api_key=key, max_retries=retries)


def caught(call):
    return sdk_results.caught(
        openai,
        call,
        ("AuthenticationError", "PermissionDeniedError", "NotFoundError", "RateLimitError"),
        lambda e: {"code": e.code, "type": e.type, "param": e.param, "should_retry": e.response.headers.get("x-should-retry")},
    )


result = {"sdk": openai.__version__}
result["unauthorized"] = caught(lambda: client("trp_test_not-a-real-key").chat.completions.create(**hello))
result["scope"] = caught(lambda: client(keys["embeddings_only"]).chat.completions.create(**hello))
result["scope_allowed"] = len(client(keys["embeddings_only"]).embeddings.create(model="text-embedding-3-small", input="hi").data)
result["model"] = caught(lambda: client(keys["default"]).chat.completions.create(**{**hello, "model": "gpt-9-imaginary"}))
limited = client(keys["two_per_minute"])
limited.chat.completions.create(**hello)
limited.chat.completions.create(**hello)
result["rate_limit"] = caught(lambda: limited.chat.completions.create(**hello))
# The SDK's default retries are on here: x-should-retry: false must stop them.
broke = client(keys["hard_budget"], retries=2)
broke.chat.completions.create(**hello)  # admitted while nothing is spent; it spends past the limit
started = time.monotonic()
result["budget"] = caught(lambda: broke.chat.completions.create(**{**hello, "max_tokens": 1000}))
result["budget"]["elapsed_ms"] = (time.monotonic() - started) * 1000
print(json.dumps(result))
