#!/usr/bin/env bash
# Builds the Dapr runtime binaries Troupe runs on (daprd, placement,
# scheduler at Dapr 1.18.3) from the pinned wrapper module in dapr/runtime,
# and links them into dapr/.bin/.
#
# Binaries are cached outside the repo under
#   ${TROUPE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/troupe}/dapr/<version>-<hash>/
# where <hash> covers dapr/runtime/** and this script, so a second run is a
# no-op and any change to the recipe rebuilds. Needs Go and the Go module
# proxy only (no Docker, no downloads of prebuilt binaries).
#
# Usage: bash dapr/build.sh [--force]   (--force rebuilds even when cached)
set -euo pipefail

DAPR_VERSION=1.18.3
# The v1.18.3 tag's commit, as the module proxy reports it (Origin.Hash).
DAPR_COMMIT=2dcf2e3548faf3c740b3d29ee300e2132db65cff
BINARIES=(daprd placement scheduler)

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUNTIME_DIR="$HERE/runtime"
BIN_DIR="$HERE/.bin"
CACHE_ROOT="${TROUPE_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:?HOME or TROUPE_CACHE_DIR must be set}/.cache}/troupe}/dapr"
CACHE_ROOT="$(realpath -m "$CACHE_ROOT")" # the build cds; keep it absolute
KEEP_BUILDS=3 # older <version>-<hash> folders are pruned after a build

force=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    -h | --help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "dapr/build.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

log() { echo "dapr/build.sh: $*"; }

started=$(date +%s%N)
elapsed() { echo "$(( ($(date +%s%N) - started) / 1000000 )) ms"; }

# Key: every file of the wrapper module (path and content) plus this script,
# which holds the version, the ldflags and the build steps.
source_hash() {
  (
    cd "$HERE"
    { find runtime -type f -print | LC_ALL=C sort; echo build.sh; } |
      tr '\n' '\0' | xargs -0 sha256sum
  ) | sha256sum | cut -c1-16
}
HASH="$(source_hash)"
OUT="$CACHE_ROOT/$DAPR_VERSION-$HASH"

cached() {
  [[ -f "$OUT/.complete" ]] || return 1
  local b
  for b in "${BINARIES[@]}"; do [[ -x "$OUT/$b" ]] || return 1; done
}

# Points dapr/.bin/<binary> at the cache; prints whether anything changed.
link_bins() {
  mkdir -p "$BIN_DIR"
  local b changed=0
  for b in "${BINARIES[@]}"; do
    if [[ "$(readlink "$BIN_DIR/$b" 2>/dev/null || true)" != "$OUT/$b" ]]; then
      ln -sfn "$OUT/$b" "$BIN_DIR/$b"
      changed=1
    fi
  done
  if ((changed)); then
    log "linked ${BINARIES[*]} into $BIN_DIR -> $OUT"
  else
    log "links in $BIN_DIR already point at $OUT"
  fi
}

report_version() {
  local v
  v="$("$BIN_DIR/daprd" --version)"
  echo "daprd --version: $v"
  if [[ "$v" != "$DAPR_VERSION" ]]; then
    echo "dapr/build.sh: expected daprd --version to print $DAPR_VERSION" >&2
    exit 1
  fi
}

if ((force == 0)) && cached; then
  log "cached: $OUT (nothing to build)"
  link_bins
  report_version
  log "done in $(elapsed)"
  exit 0
fi

command -v go >/dev/null || {
  echo "dapr/build.sh: Go is required (dapr/runtime/go.mod asks for go $(sed -n 's/^go //p' "$RUNTIME_DIR/go.mod"))" >&2
  exit 1
}

mkdir -p "$CACHE_ROOT"
# One build at a time per cache (the cluster launcher and tests may race).
exec 9>"$CACHE_ROOT/.lock"
if ! flock -n 9; then
  log "another build holds $CACHE_ROOT/.lock; waiting"
  flock 9
fi
if ((force == 0)) && cached; then
  log "cached by a concurrent run: $OUT"
  link_bins
  report_version
  log "done in $(elapsed)"
  exit 0
fi

# The checksum database has no entry for some versions the proxy serves
# (etcd 3.5.30, go-etcd-cron, components-contrib): the committed go.sum is
# what pins every module, and -mod=readonly below refuses anything not in it.
export GOSUMDB=off
export CGO_ENABLED=0
export GOWORK=off
export GOFLAGS=-buildvcs=false

log "building Dapr $DAPR_VERSION ($(go version | cut -d' ' -f3-)) into $OUT"

# The build folder lives in the cache, outside the repo: a copy of the
# wrapper module plus a writable copy of the dapr module, whose
# cmd/daprd/components/zz_notag.go (a panic in init() when daprd is built
# without -tags stablecomponents/allcomponents) is blanked. Go refuses
# -overlay for files in the module cache, hence the copy.
WORK="$CACHE_ROOT/build"
STAGE="$CACHE_ROOT/.stage-$HASH-$$"
trap 'rm -rf "$STAGE"' EXIT
rm -rf "$WORK" "$STAGE"
mkdir -p "$WORK" "$STAGE"
cp -R "$RUNTIME_DIR/." "$WORK/"
cd "$WORK"

log "fetching the dapr module (Go module proxy; checked against go.sum)"
go mod download github.com/dapr/dapr
dapr_src="$(go list -mod=readonly -m -f '{{.Dir}}' github.com/dapr/dapr)"
[[ -d "$dapr_src" ]] || { echo "dapr/build.sh: dapr module not found in the module cache" >&2; exit 1; }
cp -R "$dapr_src" "$WORK/dapr"
chmod -R u+w "$WORK/dapr"
cat >"$WORK/dapr/cmd/daprd/components/zz_notag.go" <<'EOF'
// Blanked by Troupe's dapr/build.sh: components are registered in the
// wrapper's main instead of through build tags.
package components
EOF
go mod edit -replace github.com/dapr/dapr=./dapr

ldflags="-s -w"
ldflags+=" -X github.com/dapr/dapr/pkg/buildinfo.version=$DAPR_VERSION"
ldflags+=" -X github.com/dapr/dapr/pkg/buildinfo.gitcommit=$DAPR_COMMIT"
ldflags+=" -X github.com/dapr/dapr/pkg/buildinfo.gitversion=v$DAPR_VERSION"
ldflags+=" -X github.com/dapr/kit/logger.DaprVersion=$DAPR_VERSION"

log "compiling ${BINARIES[*]} (CGO_ENABLED=0; downloads the other modules; ~8 min on 2 cores with empty Go caches)"
go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$STAGE/" \
  ./cmd/daprd ./cmd/placement ./cmd/scheduler

{
  echo "dapr $DAPR_VERSION ($DAPR_COMMIT)"
  echo "source hash $HASH"
  go version
  date -u +%Y-%m-%dT%H:%M:%SZ
} >"$STAGE/BUILD-INFO"
touch "$STAGE/.complete"
rm -rf "$OUT"
mv "$STAGE" "$OUT"
rm -rf "$WORK"
# Prune all but the newest builds (a running binary survives its deletion).
ls -1dt "$CACHE_ROOT"/[0-9]*-*/ 2>/dev/null | tail -n +$((KEEP_BUILDS + 1)) | while read -r old; do
  log "pruning old build ${old%/}"
  rm -rf "$old"
done
log "built: $(cd "$OUT" && du -sh "${BINARIES[@]}" | awk '{printf "%s %s  ", $2, $1}')"

link_bins
report_version
log "done in $(elapsed)"
