#!/usr/bin/env bash
# `npm run image`: builds the Troupe container image (Containerfile) with
# podman, as localhost/troupe:<package.json version> and :latest, and prints
# its size. Idempotent; a second run is the cached build (~10 s).
#
#   1. podman, buildah, runc and mmdebstrap from Debian (apt-get) if missing;
#   2. the base: a Debian 12 minbase root filesystem made by mmdebstrap once
#      (cached tarball), imported as localhost/bookworm-minbase:12 when podman
#      does not have it. No container registry is needed; with one, build
#      with `podman build --build-arg BASE=node:22-bookworm-slim .` instead;
#   3. `podman build` with the host's CA bundle as a build secret (npm and
#      the Node download verify TLS with it; it is never written to a layer).
#
# Cache: ${TROUPE_CACHE_DIR:-~/.cache/troupe}/image (the base tarball and the
# podman settings, scripts/image-env.sh). TROUPE_IMAGE_REPOSITORY overrides
# the repository name (default localhost/troupe); TROUPE_IMAGE_FFMPEG=true
# adds Debian's ffmpeg (video jobs; +600 MB).
# Docs: docs/operations/container-image.md.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
say() { echo "image: $*"; }
die() { echo "image: FAILED: $*" >&2; exit 1; }

missing=()
for tool in podman buildah runc mmdebstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if ((${#missing[@]})); then
  ((EUID == 0)) || die "missing ${missing[*]}; install them (apt-get install ${missing[*]}) or run this as root"
  say "installing ${missing[*]} from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# shellcheck source=scripts/image-env.sh
source scripts/image-env.sh

# The base: its recipe (these arguments) is hashed into a label, so a change
# here rebuilds the tarball and re-imports it.
base_tar="$IMAGE_CACHE/bookworm-minbase.tar"
sources=()
# The Debian sources this machine's apt uses (a local mirror stays local);
# without them mmdebstrap takes deb.debian.org with updates and security.
[[ -f /etc/apt/sources.list.d/debian.sources ]] && sources=(/etc/apt/sources.list.d/debian.sources)
mmdebstrap_args=(
  --variant=minbase --mode=root --format=tar
  --aptopt='Acquire::Languages "none"'
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*'
  bookworm
)
recipe=$(printf '%s\n' "${mmdebstrap_args[@]}" "${sources[@]}" | cat - "${sources[@]}" | sha256sum | cut -c1-16)

if [[ "$(cat "$base_tar.recipe" 2>/dev/null)" != "$recipe" || ! -s "$base_tar" ]]; then
  ((EUID == 0)) || die "mmdebstrap --mode=root needs root to make the base"
  exec 9>"$IMAGE_CACHE/.base.lock"
  flock 9
  if [[ "$(cat "$base_tar.recipe" 2>/dev/null)" != "$recipe" || ! -s "$base_tar" ]]; then
    say "making the Debian 12 minbase root filesystem with mmdebstrap (~1 min, once)"
    t=$(date +%s)
    mmdebstrap --quiet "${mmdebstrap_args[@]}" "$base_tar.partial" "${sources[@]}"
    mv "$base_tar.partial" "$base_tar"
    echo "$recipe" >"$base_tar.recipe"
    say "base tarball $(du -m "$base_tar" | cut -f1) MB in $(($(date +%s) - t)) s"
  fi
  exec 9>&-
fi

if [[ "$(podman image inspect --format '{{index .Labels "troupe.base.recipe"}}' "$BASE_IMAGE" 2>/dev/null)" != "$recipe" ]]; then
  say "importing $BASE_IMAGE"
  podman import --quiet \
    --change 'CMD ["/bin/bash"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "LABEL troupe.base.recipe=$recipe" \
    "$base_tar" "$BASE_IMAGE" >/dev/null
fi

version=$(troupe_version)
[[ -n "$version" ]] || die "no version in package.json"
image="$IMAGE_REPOSITORY:$version"
secret=()
ca_bundle=/etc/ssl/certs/ca-certificates.crt
[[ -f "$ca_bundle" ]] && secret=(--secret "id=ca,src=$ca_bundle")
registry=$(npm config get registry 2>/dev/null || echo https://registry.npmjs.org/)
# TROUPE_IMAGE_FFMPEG=true: with Debian's ffmpeg (video jobs; +600 MB).
ffmpeg="${TROUPE_IMAGE_FFMPEG:-false}"
[[ "$ffmpeg" == true || "$ffmpeg" == false ]] || die "TROUPE_IMAGE_FFMPEG must be true or false, not $ffmpeg"

say "building $image (base $BASE_IMAGE, npm registry $registry, ffmpeg $ffmpeg)"
t=$(date +%s)
# --format docker: the OCI format has no HEALTHCHECK (podman drops it).
podman build --format docker --network=host "${secret[@]}" \
  --build-arg "BASE=$BASE_IMAGE" --build-arg "NPM_REGISTRY=$registry" --build-arg "FFMPEG=$ffmpeg" --build-arg "VERSION=$version" \
  --tag "$image" --tag "$IMAGE_REPOSITORY:latest" \
  --file Containerfile . || die "podman build"
say "built $image (and :latest) in $(($(date +%s) - t)) s; image size $(image_size_mb "$image")"
say "done in $(($(date +%s) - started)) s"
