"""The `openai-agents` PyPI package in chat-completions mode
(OpenAIChatCompletionsModel), default model settings, unmodified but for
the client it is given: a run with a function tool against Troupe's
/openai/v1. Reads {"base_url", "api_key", "models": [...]} on stdin; prints
one JSON object per model. Tracing is off: nothing goes to OpenAI."""

import asyncio
import json

from agents import Agent, OpenAIChatCompletionsModel, Runner
from agents_setup import client, config, get_weather, seen


async def case(model_name):
    model = OpenAIChatCompletionsModel(model=model_name, openai_client=client)
    before = len(seen)
    result = await Runner.run(Agent(name="weather", instructions="Use the tool.", model=model, tools=[get_weather]), "weather in Paris?")
    return {"final_output": str(result.final_output), "tool_ran": len(seen) > before}


async def main():
    out = {}
    for name in config["models"]:
        out[name] = await case(name)
    print(json.dumps(out))


asyncio.run(main())
