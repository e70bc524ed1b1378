"""The `openai-agents` PyPI package in its default mode (the Responses API),
unmodified but for the client it is given: per model, a run, a function
tool round trip and a streamed run against Troupe's /openai/v1. Reads
{"base_url", "api_key", "models": [...]} on stdin; prints one JSON object
of what the runs returned. Tracing is off: nothing goes to OpenAI."""

import asyncio
import json

from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner
from agents_setup import client, config, get_weather, seen


async def case(model_name):
    model = OpenAIResponsesModel(model=model_name, openai_client=client)
    plain = await Runner.run(Agent(name="echo", instructions="Answer briefly.", model=model), "hello agents")
    before = len(seen)
    tooled = await Runner.run(
        Agent(name="weather", instructions="Use the tool.", model=model, tools=[get_weather], model_settings=ModelSettings(tool_choice="required"), reset_tool_choice=True),
        "Weather in Paris?",
    )
    streamed = Runner.run_streamed(Agent(name="streamer", instructions="Answer briefly.", model=model), "hello stream")
    deltas = []
    async for event in streamed.stream_events():
        if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
            deltas.append(event.data.delta)
    return {
        "plain": plain.final_output,
        "response_ids": [r.response_id for r in plain.raw_responses],
        "tool_runs": len(seen) - before,
        "tool_input": seen[-1] if len(seen) > before else None,
        "tooled": tooled.final_output,
        "streamed": streamed.final_output,
        "deltas": deltas,
    }


async def main():
    return {model: await case(model) for model in config["models"]}


print(json.dumps(asyncio.run(main())))
