"""The official `openai` PyPI SDK, unmodified but for base_url and api_key,
with background responses on Troupe's /openai/v1/responses: create with
background=True, poll retrieve until it ends, a stream resumed with
starting_after while it runs and after it ended, and a cancel mid-run.
Reads {"base_url", "api_key", "model"} on stdin; prints one JSON object of
what the SDK returned, which the tap test asserts on."""

import json
import sys
import time

import openai

config = json.load(sys.stdin)
client = openai.OpenAI(base_url=config["base_url"], api_key=config["api_key"], max_retries=0)
model = config["model"]
ask = "tell me a long story about a lighthouse keeper and the sea birds"

queued = client.responses.create(model=model, input=ask, background=True)
seen = {queued.status}
current = queued
while current.status == "queued":
    current = client.responses.retrieve(queued.id)
    seen.add(current.status)
# Still running: resumed after event 2, it follows the live events to the end.
resumed_live = [e.sequence_number for e in client.responses.retrieve(queued.id, stream=True, starting_after=2)]
while current.status in ("queued", "in_progress"):
    time.sleep(0.05)
    current = client.responses.retrieve(queued.id)
    seen.add(current.status)
whole = [(e.type, e.sequence_number) for e in client.responses.retrieve(queued.id, stream=True)]
resumed_after = [e.sequence_number for e in client.responses.retrieve(queued.id, stream=True, starting_after=len(whole) - 3)]

slow = client.responses.create(model=model, input=ask, background=True)
while client.responses.retrieve(slow.id).status == "queued":
    time.sleep(0.05)
cancelled = client.responses.cancel(slow.id)
again = client.responses.cancel(slow.id)

print(json.dumps({
    "queued": {"status": queued.status, "background": queued.background},
    "seen": sorted(seen),
    "final": {"status": current.status, "output_text": current.output_text},
    "whole": whole,
    "resumed_live": resumed_live,
    "resumed_after": resumed_after,
    "cancelled": cancelled.status,
    "cancelled_again": again.status,
    "cancelled_id": slow.id,
}))
