"""The official `openai` PyPI SDK, unmodified but for base_url and api_key,
against Troupe's /openai/v1/conversations: create with items and metadata,
retrieve, update, items create / list (both orders, auto-paging) /
retrieve / delete, a 21-item create (BadRequestError naming `items`), a
response continuing the conversation, delete, and retrieve after the delete
(NotFoundError). Reads {"base_url", "api_key", "model"} on stdin; prints one
JSON object of what the SDK returned."""

import json
import sys

import openai

config = json.load(sys.stdin)
client = openai.OpenAI(base_url=config["base_url"], api_key=config["api_key"], max_retries=0)
result = {"sdk": openai.__version__}


def say(text):
    return {"type": "message", "role": "user", "content": text}


def text_of(item):
    return "".join(getattr(part, "text", "") for part in item.content) if item.type == "message" else ""


conv = client.conversations.create(items=[say("m0"), say("m1")], metadata={"topic": "py"})
result["created"] = {"id": conv.id, "object": conv.object, "metadata": conv.metadata, "created_at_type": type(conv.created_at).__name__}
result["retrieved"] = client.conversations.retrieve(conv.id).id
result["updated"] = client.conversations.update(conv.id, metadata={"topic": "changed"}).metadata

added = client.conversations.items.create(conv.id, items=[say(f"m{i}") for i in range(2, 7)])
result["added"] = {"object": added.object, "count": len(added.data), "first_id": added.first_id, "last_id": added.last_id, "has_more": added.has_more}
result["asc"] = [text_of(item) for item in client.conversations.items.list(conv.id, order="asc", limit=2)]
result["desc"] = [text_of(item) for item in client.conversations.items.list(conv.id, limit=3)]

item_id = added.data[0].id
item = client.conversations.items.retrieve(item_id, conversation_id=conv.id)
result["item"] = {"id": item.id, "type": item.type, "role": item.role, "status": item.status, "text": text_of(item)}
after_delete = client.conversations.items.delete(item_id, conversation_id=conv.id)
result["item_deleted"] = {"id": after_delete.id, "object": after_delete.object}

try:
    client.conversations.items.create(conv.id, items=[say(f"x{i}") for i in range(21)])
    result["too_many"] = "accepted"
except openai.BadRequestError as error:
    result["too_many"] = {"class": type(error).__name__, "status": error.status_code, "param": error.param}

response = client.responses.create(model=config["model"], input="next turn", conversation=conv.id)
result["response"] = {"conversation": response.conversation.id if response.conversation else None, "output_text": response.output_text}
result["after_response"] = len(list(client.conversations.items.list(conv.id, limit=100)))

deleted = client.conversations.delete(conv.id)
result["deleted"] = {"id": deleted.id, "object": deleted.object, "deleted": deleted.deleted}
try:
    client.conversations.retrieve(conv.id)
    result["after_delete"] = "still there"
except openai.NotFoundError as error:
    result["after_delete"] = {"class": type(error).__name__, "status": error.status_code}

print(json.dumps(result))
