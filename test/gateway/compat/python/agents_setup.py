"""What the `openai-agents` scripts here share: the input they read on
stdin, tracing turned off (nothing goes to OpenAI), the one AsyncOpenAI
client pointed at Troupe (no retries, so a refusal shows at once) and the
weather tool whose runs the scripts count."""

import json
import sys

from agents import function_tool, set_tracing_disabled
from openai import AsyncOpenAI

config = json.load(sys.stdin)
set_tracing_disabled(True)
client = AsyncOpenAI(base_url=config["base_url"], api_key=config["api_key"], max_retries=0)

# Each input the weather tool was run with, in order.
seen = []


@function_tool
def get_weather(input: str) -> str:
    """Weather for a city."""
    seen.append(input)
    return "sunny, 21C"
