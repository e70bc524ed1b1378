"""The official `openai` PyPI SDK, unmodified but for base_url and api_key,
against Troupe's /openai/v1/videos (Troupe's video jobs on the simulated
provider): create, poll until completed, download the content, delete, and
retrieve after the delete (NotFoundError). Reads {"base_url", "api_key"} on
stdin; prints one JSON object of what the SDK returned."""

import json
import sys
import time
import warnings

import openai

warnings.simplefilter("ignore", DeprecationWarning)  # the SDK marks Sora's API deprecated; the shape is what is tested
config = json.load(sys.stdin)
client = openai.OpenAI(base_url=config["base_url"], api_key=config["api_key"], max_retries=0)
result = {"sdk": openai.__version__}

created = client.videos.create(model="simulated-video", prompt="a paper boat on a pond", seconds="4")
result["created"] = {"id": created.id, "object": created.object, "status": created.status, "model": created.model, "seconds": created.seconds}
video = created
deadline = time.time() + 60
while video.status not in ("completed", "failed") and time.time() < deadline:
    time.sleep(0.15)
    video = client.videos.retrieve(created.id)
result["done"] = {"status": video.status, "progress": video.progress}

content = client.videos.download_content(created.id)
data = content.read()
result["content"] = {"content_type": content.response.headers.get("content-type"), "ftyp": data[4:8].decode("latin1"), "bytes": len(data)}

deleted = client.videos.delete(created.id)
result["deleted"] = {"id": deleted.id, "object": deleted.object, "deleted": deleted.deleted}
try:
    client.videos.retrieve(created.id)
    result["after_delete"] = "still there"
except openai.NotFoundError as error:
    result["after_delete"] = {"class": type(error).__name__, "status": error.status_code}

print(json.dumps(result))
