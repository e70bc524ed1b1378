"""The official `openai` PyPI SDK, unmodified but for base_url and api_key,
against Troupe's /openai/v1: embeddings (the SDK's default encoding, which
is base64 on the wire, and float), the models list, speech, transcription of
an uploaded file, images as URLs and as b64_json. Reads {"base_url",
"api_key"} on stdin; prints one JSON object of what the SDK returned."""

import base64
import json
import os
import struct
import sys
import tempfile
import urllib.request

import openai

config = json.load(sys.stdin)
client = openai.OpenAI(base_url=config["base_url"], api_key=config["api_key"], max_retries=0)
result = {"sdk": openai.__version__}


def png_size(data):
    """(format, width, height) from a PNG's signature and IHDR."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return ["not png", 0, 0]
    width, height = struct.unpack(">II", data[16:24])
    return ["png", width, height]


# Embeddings: the SDK asks for base64 unless told otherwise and decodes it to floats.
raw = client.embeddings.with_raw_response.create(model="text-embedding-3-small", input=["alpha", "beta"])
default = raw.parse()
floats = client.embeddings.create(model="text-embedding-3-small", input=["alpha", "beta"], encoding_format="float")
result["embeddings"] = {
    "wire_type": type(raw.http_response.json()["data"][0]["embedding"]).__name__,
    "object": default.object,
    "model": default.model,
    "count": len(default.data),
    "dims": [len(d.embedding) for d in default.data],
    "float_dims": [len(d.embedding) for d in floats.data],
    "element_type": type(default.data[0].embedding[0]).__name__,
    "max_diff": max(abs(a - b) for d, f in zip(default.data, floats.data) for a, b in zip(d.embedding, f.embedding)),
    "usage": default.usage.model_dump(),
}
short = client.embeddings.create(model="text-embedding-3-small", input="one text", encoding_format="float", dimensions=256)
result["embeddings"]["dimensions_256"] = len(short.data[0].embedding)

# Models: the SDK pages through the list.
ids = [m.id for m in client.models.list()]
result["models"] = {"ids": ids, "retrieved": client.models.retrieve("claude-haiku-4-5").model_dump()}

# Speech: the audio itself, written to a file as the SDK's docs show.
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "speech.wav")
    speech = client.audio.speech.create(model="simulated-speech", voice="alto", input="Some words to transcribe again", response_format="wav")
    speech.write_to_file(path)
    with open(path, "rb") as f:
        wav = f.read()
    result["speech"] = {"content_type": speech.response.headers.get("content-type"), "riff": wav[:4].decode("latin1"), "wave": wav[8:12].decode("latin1"), "bytes": len(wav)}
    # Transcription: the file uploaded as the SDK sends it (multipart).
    with open(path, "rb") as f:
        transcript = client.audio.transcriptions.create(model="simulated-transcribe", file=f, language="en")
    with open(path, "rb") as f:
        text = client.audio.transcriptions.create(model="simulated-transcribe", file=f, language="en", response_format="text")
    result["transcription"] = {"text": transcript.text, "text_format": text}

# Images: stored files by URL (fetched here like any client would), or inline.
urls = client.images.generate(model="simulated-image", prompt="a red square", n=2, size="256x256")
fetched = []
for image in urls.data:
    with urllib.request.urlopen(image.url) as res:
        fetched.append({"url": image.url, "status": res.status, "png": png_size(res.read())})
inline = client.images.generate(model="simulated-image", prompt="a blue square", size="512x512", response_format="b64_json")
result["images"] = {
    "url": fetched,
    "b64_json": {"url": inline.data[0].url, "png": png_size(base64.b64decode(inline.data[0].b64_json))},
}
print(json.dumps(result))
