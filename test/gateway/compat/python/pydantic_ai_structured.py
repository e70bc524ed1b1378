"""pydantic-ai, unmodified but for the OpenAI provider's base_url and
api_key, against Troupe's /openai/v1 on a simulated model: an Agent whose
output_type is a pydantic model, with its default output mode (a
final_result tool the model must call) and with NativeOutput
(response_format json_schema). pydantic validates what the model answered;
a reply that does not fit the model fails the run (after its retries).
Reads {"base_url", "api_key", "model"} on stdin; prints one JSON object of
the outputs, which the tap test asserts on."""

import json
import sys
from typing import Literal, Optional

from pydantic import BaseModel, Field
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

config = json.load(sys.stdin)


class Address(BaseModel):
    city: str
    zip: str = Field(pattern=r"^\d{5}$")


class Person(BaseModel):
    name: str = Field(min_length=2, max_length=40)
    age: int = Field(ge=0, lt=130)
    role: Literal["engineer", "designer", "manager"]
    email: Optional[str] = None
    skills: list[str] = Field(min_length=1, max_length=5)
    address: Address


model = OpenAIChatModel(config["model"], provider=OpenAIProvider(base_url=config["base_url"], api_key=config["api_key"]))
out = {}
for mode, output_type in (("tool", Person), ("native", NativeOutput(Person))):
    agent = Agent(model, output_type=output_type, retries=0)
    first = agent.run_sync("Describe an employee")
    again = agent.run_sync("Describe an employee")
    out[mode] = {"output": first.output.model_dump(), "again": again.output.model_dump(), "type": type(first.output).__name__}
print(json.dumps(out))
