#!/usr/bin/env bash
# The official `openai`, `anthropic` and `google-genai` PyPI packages and the agent clients (litellm, openai-agents, pydantic-ai), at the versions pinned in
# test/gateway/compat/python/requirements.txt, in a venv cached under
# ${TROUPE_CACHE_DIR:-$HOME/.cache/troupe}/python-sdks. Idempotent: the venv is
# made again only when the pins changed (their hash is kept beside it) or it
# is broken. Prints the venv's python path as its last line (.ci/run exports
# it as TEST_PYTHON_SDK_PYTHON for test/gateway/compat/python-*.test.ts).
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=test/gateway/compat/python/requirements.txt
venv="${TROUPE_CACHE_DIR:-$HOME/.cache/troupe}/python-sdks"
python="$venv/bin/python"
want=$(sha256sum "$requirements" | cut -d' ' -f1)

current() {
  [[ "$(cat "$venv/requirements.sha256" 2>/dev/null)" == "$want" ]] &&
    "$python" -c 'import openai, anthropic, litellm, agents, pydantic_ai, google.genai' 2>/dev/null
}

if ! current; then
  echo "installing the Python SDKs ($requirements) into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$requirements" >&2
  "$venv/bin/pip" check >&2 # --no-deps: a dependency missing from the pins fails here, by name
  echo "$want" >"$venv/requirements.sha256"
fi
"$python" -c 'import openai, anthropic; print(f"openai {openai.__version__}, anthropic {anthropic.__version__}")' >&2
echo "$python"
