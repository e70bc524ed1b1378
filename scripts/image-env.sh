# Sourced by scripts/image.sh and scripts/image-smoke.sh: the image names,
# the cache folder, and the podman settings both use.
#
# Podman runs with a CONTAINERS_CONF file of our own (nothing under /etc
# changes) unless the caller already set one. It pins what the default
# configuration gets wrong on some hosts (found on Debian 12 VMs):
#   - crun fails there ("cgroups in hybrid mode not supported"): use runc;
#   - podman's default rlimits fail ("setrlimit RLIMIT_NOFILE: Operation not
#     permitted"): pin nofile to this shell's hard limit (never above it)
#     and nproc to 4096.
# shellcheck shell=bash

IMAGE_REPOSITORY="${TROUPE_IMAGE_REPOSITORY:-localhost/troupe}"
# The local base: a Debian 12 minbase root filesystem made by mmdebstrap
# (no container registry needed).
BASE_IMAGE="localhost/bookworm-minbase:12"
IMAGE_CACHE="${TROUPE_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:?HOME or TROUPE_CACHE_DIR must be set}/.cache}/troupe}/image"
IMAGE_CACHE="$(realpath -m "$IMAGE_CACHE")"
mkdir -p "$IMAGE_CACHE"

if [[ -z "${CONTAINERS_CONF:-}" ]]; then
  nofile=$(ulimit -Hn)
  [[ "$nofile" == unlimited ]] && nofile=1048576
  CONTAINERS_CONF="$IMAGE_CACHE/containers.conf"
  conf="[containers]
default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=4096:4096\"]

[engine]
runtime = \"runc\"
cgroup_manager = \"cgroupfs\""
  # Rewritten only when it changes, so concurrent runs never read half a file.
  if [[ "$(cat "$CONTAINERS_CONF" 2>/dev/null)" != "$conf" ]]; then
    printf '%s\n' "$conf" >"$CONTAINERS_CONF.$$"
    mv "$CONTAINERS_CONF.$$" "$CONTAINERS_CONF"
  fi
  unset conf nofile
fi
export CONTAINERS_CONF

# Troupe's version (package.json): the image tag.
troupe_version() {
  sed -n 's/^  "version": "\([^"]*\)",$/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../package.json" | head -1
}

# The image's size in MB, as `podman images` counts it (uncompressed layers).
image_size_mb() {
  podman image inspect "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["Size"] // 1_000_000, "MB")'
}
