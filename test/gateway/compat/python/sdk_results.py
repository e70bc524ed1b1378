"""What the SDK scripts here share, so the keys the tap tests read are
written once: a refusal caught as the SDK's own exception class, and the
four chat cases run per model. Both SDKs (openai, anthropic) are generated
by Stainless and raise the same APIStatusError shape."""


def caught(sdk, call, class_names, details=lambda e: {}):
    """Runs `call`; if the SDK raises an APIStatusError, what it carried and
    which of `class_names` (and APIStatusError) it is an instance of, plus
    the SDK-specific `details(e)`; {"class": None} if nothing was raised."""
    try:
        call()
    except sdk.APIStatusError as e:
        return {
            "class": type(e).__name__,
            "status": e.status_code,
            "body": e.body,
            "request_id": e.request_id,
            "retry_after": e.response.headers.get("retry-after"),
            **details(e),
            "is": {name: isinstance(e, getattr(sdk, name)) for name in (*class_names, "APIStatusError")},
        }
    return {"class": None}


def chat_cases(models, plain, streamed, tool_round_trip):
    """Per model: a plain answer, a stream, and a tool round trip plain and streamed."""
    return {
        model: {
            "plain": plain(model),
            "stream": streamed(model),
            "tools_plain": tool_round_trip(model, stream=False),
            "tools_stream": tool_round_trip(model, stream=True),
        }
        for model in models
    }
