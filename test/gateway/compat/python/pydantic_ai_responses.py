"""pydantic-ai's OpenAIResponsesModel (the Responses API), unmodified but
for the OpenAI provider's base_url and api_key, against Troupe's
/openai/v1: per model in "tool_models", an Agent with a function tool
(pydantic-ai runs it and sends its return back as a function_call_output);
per model in "structured_models", an Agent whose output_type is a pydantic
model, in its default output mode (a final_result tool call pydantic
validates) and with NativeOutput (text.format json_schema). Reads
{"base_url", "api_key", "tool_models", "structured_models"} on stdin;
prints one JSON object of the outputs."""

import json
import sys
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.models.openai import OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

config = json.load(sys.stdin)
provider = OpenAIProvider(base_url=config["base_url"], api_key=config["api_key"])


class Address(BaseModel):
    city: str
    zip: str = Field(pattern=r"^\d{5}$")


class Person(BaseModel):
    name: str = Field(min_length=2, max_length=40)
    age: int = Field(ge=0, lt=130)
    role: Literal["engineer", "designer", "manager"]
    skills: list[str] = Field(min_length=1, max_length=5)
    address: Address


def tooled(name):
    seen = []
    agent = Agent(OpenAIResponsesModel(name, provider=provider), retries=0)

    @agent.tool_plain
    def get_weather(input: str, n: int = 1) -> str:
        """Weather for a city (the fakes also send n)."""
        seen.append(input)
        return "sunny, 21C"

    result = agent.run_sync("Weather in Paris?")
    kinds = [part.part_kind for m in result.all_messages() for part in m.parts]
    return {"output": result.output, "tool_inputs": seen, "parts": kinds,
            "response_ids": [m.provider_response_id for m in result.all_messages() if getattr(m, "kind", None) == "response"]}


def structured(name):
    out = {}
    for mode, output_type in (("tool", Person), ("native", NativeOutput(Person))):
        result = Agent(OpenAIResponsesModel(name, provider=provider), output_type=output_type, retries=0).run_sync("Describe an employee")
        out[mode] = {"output": result.output.model_dump(), "type": type(result.output).__name__}
    return out


print(json.dumps({
    "tool": {name: tooled(name) for name in config["tool_models"]},
    "structured": {name: structured(name) for name in config["structured_models"]},
}))
