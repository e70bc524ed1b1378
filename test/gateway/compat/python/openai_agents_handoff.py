"""A handoff with the `openai-agents` PyPI package in its default mode (the
Responses API), unmodified but for the client it is given: per model, agent
A has only a handoff to agent B; the model calls A's transfer tool, the SDK
switches agents and B answers, plain and streamed, against Troupe's
/openai/v1. Reads {"base_url", "api_key", "models": [...], "required":
[...]} on stdin (the models that choose a tool only when made to); prints
one JSON object of what the runs returned. Tracing is off."""

import asyncio
import json

from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, handoff
from agents_setup import client, config


async def case(model_name):
    model = OpenAIResponsesModel(model=model_name, openai_client=client)
    handed = []
    b = Agent(name="b", instructions="You are agent B. Answer the user.", model=model)
    settings = ModelSettings(tool_choice="required") if model_name in config["required"] else ModelSettings()
    a = Agent(name="a", instructions="Hand every question to agent B.", model=model, model_settings=settings,
              handoffs=[handoff(b, on_handoff=lambda _ctx: handed.append(1))])
    plain = await Runner.run(a, "Who answers this?")
    streamed = Runner.run_streamed(a, "Who answers this?")
    deltas = []
    async for event in streamed.stream_events():
        if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
            deltas.append(event.data.delta)
    return {
        "handoffs": len(handed),
        "last_agent": plain.last_agent.name,
        "items": [i.type for i in plain.new_items],
        "answer": plain.final_output,
        "response_ids": [r.response_id for r in plain.raw_responses],
        "streamed_last_agent": streamed.last_agent.name,
        "streamed": streamed.final_output,
        "deltas": deltas,
    }


async def main():
    return {model: await case(model) for model in config["models"]}


print(json.dumps(asyncio.run(main())))
