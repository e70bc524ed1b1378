#!/usr/bin/env bash
# `npm run chart:check`: checks the Helm chart in charts/troupe without a
# Kubernetes cluster.
#   1. `helm lint --strict` with each value set in charts/troupe/ci/;
#   2. `helm template` with each set, and the rendered YAML validated offline:
#      Kubernetes kinds with `kubernetes-validate --strict` (PyPI; it ships the
#      schemas), Dapr kinds against the CRDs of the dapr 1.18.3 Go module;
#   3. wrong values must fail at install (values.schema.json): each case below;
#   4. values.config accepts only settings Troupe reads (gateway/config.ts) and,
#      with the settings the chart derives and the secret-only ones, covers
#      all of them; the chart's README names every value.
# Helm is built once from Go modules and kubernetes-validate installed once
# into a venv, both cached under $TROUPE_CACHE_DIR (like dapr/build.sh).
# Exits non-zero on the first failing section, saying which.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VERSION=v3.22.0
KV_VERSION=1.37.0
K8S_VERSION=1.37.0
CHART=charts/troupe
CACHE_ROOT="${TROUPE_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:?HOME or TROUPE_CACHE_DIR must be set}/.cache}/troupe}"
CACHE_ROOT="$(realpath -m "$CACHE_ROOT")"
# Helm's Makefile stamps its version and the Kubernetes minor of its client-go
# (v0.37 for Helm 3.22) into the binary: without them `helm template` assumes
# Kubernetes 1.20 and lint's deprecation rules look at the wrong release.
HELM_K8S_MINOR=37
HELM_DIR="$CACHE_ROOT/helm/$HELM_VERSION-k8s1.$HELM_K8S_MINOR"
HELM="$HELM_DIR/helm"
KV_VENV="$CACHE_ROOT/kubernetes-validate/$KV_VERSION"

say() { echo "chart-check: $*"; }
die() { echo "chart-check: FAILED: $*" >&2; exit 1; }

build_helm() {
  if [[ -x "$HELM" && -f "$HELM_DIR/.complete" ]]; then return 0; fi
  command -v go >/dev/null || die "Go is required to build Helm"
  mkdir -p "$CACHE_ROOT/helm"
  exec 9>"$CACHE_ROOT/helm/.lock"
  flock 9
  if [[ -x "$HELM" && -f "$HELM_DIR/.complete" ]]; then return 0; fi
  local stage="$CACHE_ROOT/helm/.stage-$$" started
  started=$(date +%s)
  rm -rf "$stage"
  mkdir -p "$stage"
  say "building Helm $HELM_VERSION from Go modules (~2 min on 2 cores, once)"
  # The checksum database has no entry for some of Helm's dependencies here.
  GOSUMDB=off GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 GOBIN="$stage" \
    go install -trimpath -ldflags "-s -w \
      -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean \
      -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$HELM_K8S_MINOR \
      -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$HELM_K8S_MINOR" \
      "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  touch "$stage/.complete"
  rm -rf "$HELM_DIR"
  mv "$stage" "$HELM_DIR"
  say "built $HELM in $(($(date +%s) - started)) s"
}

install_kubernetes_validate() {
  if [[ "$("$KV_VENV/bin/kubernetes-validate" --version 2>/dev/null)" == "$KV_VERSION" ]]; then return 0; fi
  say "installing kubernetes-validate $KV_VERSION into $KV_VENV"
  rm -rf "$KV_VENV"
  python3 -m venv "$KV_VENV"
  "$KV_VENV/bin/pip" install -q "kubernetes-validate==$KV_VERSION"
}

# The Dapr CRDs ship in the dapr module that dapr/runtime pins (go.sum checks it).
dapr_crd_dir() {
  local dir
  dir=$(cd dapr/runtime && GOSUMDB=off GOWORK=off GOFLAGS=-mod=mod go mod download -json github.com/dapr/dapr | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  [[ -d "$dir/charts/dapr/crds" ]] || die "no Dapr CRDs in $dir/charts/dapr/crds"
  echo "$dir/charts/dapr/crds"
}

build_helm
install_kubernetes_validate
"$HELM" version --short
run_dir=$(mktemp -d /tmp/troupe-chart-check.XXXXXX)
trap 'rm -rf "$run_dir"' EXIT
value_sets=("$CHART"/ci/*.yaml)
((${#value_sets[@]} >= 3)) || die "expected at least three value sets in $CHART/ci"

printf '\n=== helm lint --strict (%s value sets)\n' "${#value_sets[@]}"
for values in "${value_sets[@]}"; do
  "$HELM" lint --strict "$CHART" -f "$values" || die "helm lint with $values"
done

printf '\n=== helm template + kubernetes-validate -k %s --strict\n' "$K8S_VERSION"
rendered=()
for values in "${value_sets[@]}"; do
  out="$run_dir/$(basename "$values" .yaml).yaml"
  "$HELM" template troupe "$CHART" -f "$values" --namespace ai >"$out" || die "helm template with $values"
  rendered+=("$out")
  say "$(basename "$values"): $(grep -c '^kind:' "$out") resources"
  "$KV_VENV/bin/kubernetes-validate" -k "$K8S_VERSION" --strict "$out" | tee "$run_dir/kv.out" || die "kubernetes-validate rejected the chart rendered with $values"
  # Only the Dapr kinds may lack a Kubernetes schema; they are checked next.
  if grep "Couldn't find schema" "$run_dir/kv.out" | grep -v "api version dapr.io/"; then
    die "a rendered kind has no schema (rendered with $values)"
  fi
done

printf '\n=== Dapr resources against the Dapr 1.18.3 CRDs\n'
"$KV_VENV/bin/python" scripts/validate_dapr_resources.py "$(dapr_crd_dir)" "${rendered[@]}" || die "a Dapr resource does not match its CRD"

printf '\n=== the rendered pods, Dapr annotations and components agree with each other\n'
# The providers' secret settings come from the registry, as in the values check below.
provider_secrets=$(node --input-type=module -e 'import { providerSecretEnv } from "./providers/registry.ts"; console.log(providerSecretEnv.join(" "))')
PROVIDER_SECRET_SETTINGS="$provider_secrets" "$KV_VENV/bin/python" scripts/chart_consistency.py "${rendered[@]}" || die "the rendered chart is inconsistent"

printf '\n=== the Grafana dashboard and the PrometheusRule (monitoring.*)\n'
# Off in every value set above; rendered here with both on. The PrometheusRule
# is a CRD kind kubernetes-validate has no schema for: check_monitoring.py
# checks its shape, the dashboard's JSON, and that every PromQL expression
# names only metrics core/prometheus-metrics.ts exports.
monitoring_flags="--set monitoring.grafanaDashboard.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.prometheusRule.monthlySpendUsd=1000"
# shellcheck disable=SC2086 # the flags are meant to split
"$HELM" lint --strict "$CHART" -f "$CHART/ci/minimal.yaml" $monitoring_flags || die "helm lint with monitoring on"
# shellcheck disable=SC2086
"$HELM" template troupe "$CHART" -f "$CHART/ci/minimal.yaml" $monitoring_flags >"$run_dir/monitoring.yaml" || die "helm template with monitoring on"
exported_metrics=$(grep -o '"troupe_[a-z0-9_]*"' core/prometheus-metrics.ts | tr -d '"' | sort -u)
[[ -n "$exported_metrics" ]] || die "no metric names found in core/prometheus-metrics.ts"
# shellcheck disable=SC2086 # one argument per metric name
"$KV_VENV/bin/python" scripts/check_monitoring.py "$CHART/dashboards/troupe.json" "$run_dir/monitoring.yaml" $exported_metrics || die "the dashboard or the rules name something Troupe does not export"
# Only the dashboard's ConfigMap, through the Kubernetes schemas (the rule has none there).
"$KV_VENV/bin/python" -c 'import sys, yaml; docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ConfigMap" and "troupe.json" in (d.get("data") or {})]; yaml.safe_dump_all(docs, open(sys.argv[2], "w"))' "$run_dir/monitoring.yaml" "$run_dir/dashboard-configmap.yaml"
"$KV_VENV/bin/kubernetes-validate" -k "$K8S_VERSION" --strict "$run_dir/dashboard-configmap.yaml" || die "kubernetes-validate rejected the dashboard ConfigMap"
"$HELM" template troupe "$CHART" -f "$CHART/ci/minimal.yaml" >"$run_dir/monitoring-off.yaml" || die "helm template with the defaults"
if grep -q "kind: PrometheusRule" "$run_dir/monitoring-off.yaml" || grep -q "troupe.json:" "$run_dir/monitoring-off.yaml"; then die "monitoring renders although it is off by default"; fi

printf '\n=== wrong values fail at install (values.schema.json)\n'
# Each case: the --set flags, then a fragment the error must contain.
rejects=(
  "--set replicaCount=0|replicaCount"
  "--set redis.host=|redis/host"
  "--set redis.host=redis.example.com|redis/host"
  "--set-string replicaCount=three|replicaCount"
  "--set config.OPENAI_API_KEY=sk-in-values|OPENAI_API_KEY"
  "--set config.REDIS_URL=redis://x:6379|REDIS_URL"
  "--set config.REDIS_CLUSTER_NODES=x:6379|REDIS_CLUSTER_NODES"
  "--set redis.clusterNodes=redis://x:6379|clusterNodes"
  "--set config.NOT_A_TROUPE_SETTING=1|NOT_A_TROUPE_SETTING"
  "--set config.LOG_LEVEL=loud|LOG_LEVEL"
  "--set-string config.MAX_BODY_BYTES=big|MAX_BODY_BYTES"
  "--set config.SHUTDOWN_GRACE_MS=-1|SHUTDOWN_GRACE_MS"
  "--set s3.endpoint=https://s3.example.com|existingSecret"
  "--set elasticsearch.url=http://es:9200,elasticsearch.existingSecret=es|elasticsearch"
  "--set podDisruptionBudget.minAvailable=1,podDisruptionBudget.maxUnavailable=1|podDisruptionBudget"
  "--set ingress.enabled=true|hosts"
  "--set dapr.appPort=70000|appPort"
  "--set image.pullPolicy=Sometimes|pullPolicy"
  "--set unknownTopLevel=1|unknownTopLevel"
  "--set updateStrategy.maxSurge=0,updateStrategy.maxUnavailable=0|updateStrategy"
  "--set preStopSleepSeconds=-1|preStopSleepSeconds"
  "--set config.SHUTDOWN_GRACE_MS=30000|terminationGracePeriodSeconds"
  "--set monitoring.prometheusRule.errorRatio=2|errorRatio"
  "--set monitoring.prometheusRule.breakerOpenFor=soon|breakerOpenFor"
)
for case in "${rejects[@]}"; do
  flags="${case%|*}" expect="${case##*|}"
  # shellcheck disable=SC2086 # the flags are meant to split
  if "$HELM" template troupe "$CHART" -f "$CHART/ci/minimal.yaml" $flags >/dev/null 2>"$run_dir/err"; then
    die "helm template accepted $flags"
  fi
  grep -q -- "$expect" "$run_dir/err" || { cat "$run_dir/err" >&2; die "$flags failed, but the error does not name $expect"; }
  say "rejected as expected: $flags"
done

printf '\n=== values.config matches the settings Troupe reads\n'
# Derived by the chart from other values, or secret-only (from Secrets, never values).
derived="TROUPE_DEPLOYMENTS_FILE PORT HOST TROUPE_MODE TROUPE_REPLICA TROUPE_DATA_DIR REDIS_URL REDIS_CLUSTER_NODES ELASTICSEARCH_URL ELASTICSEARCH_INDEX DAPR_HOST DAPR_HTTP_PORT ACTOR_CALLBACK_PORT S3_ENDPOINT S3_BUCKET S3_REGION S3_ACCESS_KEY_ID S3_SECRET_ACCESS_KEY"
# The secret-only ones are the providers' (providers/registry.ts: each descriptor's secretEnv).
DERIVED="$derived" node --input-type=module -e '
  import { readFileSync } from "node:fs";
  import { settingNames } from "./gateway/config.ts";
  import { providerSecretEnv } from "./providers/registry.ts";
  const secretOnly = [...providerSecretEnv, "WEBHOOK_SECRET_KEY"];
  const schema = JSON.parse(readFileSync("charts/troupe/values.schema.json", "utf8"));
  const inValues = Object.keys(schema.properties.config.properties);
  const handled = new Set([...inValues, ...process.env.DERIVED.split(" "), ...secretOnly]);
  const troupe = new Set(settingNames);
  const invented = [...handled].filter((name) => !troupe.has(name));
  const missing = settingNames.filter((name) => !handled.has(name));
  const secretsInValues = inValues.filter((name) => secretOnly.includes(name));
  if (invented.length) console.error(`chart-check: the chart names settings Troupe does not read: ${invented.join(", ")}`);
  if (missing.length) console.error(`chart-check: Troupe settings the chart cannot set (add them to values.schema.json config, or to scripts/chart-check.sh derived or a provider descriptor secretEnv, and to charts/troupe/README.md): ${missing.join(", ")}`);
  if (secretsInValues.length) console.error(`chart-check: secret settings accepted in values: ${secretsInValues.join(", ")}`);
  if (invented.length || missing.length || secretsInValues.length) process.exit(1);
  console.log(`chart-check: ${inValues.length} settings in values.config, ${handled.size - inValues.length} derived or from Secrets; ${settingNames.length} Troupe reads`);
' || die "values.config and the settings Troupe reads disagree"

printf '\n=== the default image is the one npm run image builds\n'
# npm run image tags localhost/troupe:<package.json version>; the chart's
# default tag is its appVersion.
package_version=$(node -p 'require("./package.json").version')
app_version=$(sed -n 's/^appVersion: "\(.*\)"$/\1/p' "$CHART/Chart.yaml")
[[ "$app_version" == "$package_version" ]] || die "Chart.yaml appVersion $app_version is not package.json's version $package_version (the image tag)"
"$HELM" template troupe "$CHART" -f "$CHART/ci/minimal.yaml" >"$run_dir/default-image.yaml" || die "helm template with minimal.yaml"
grep -q "image: \"localhost/troupe:$package_version\"" "$run_dir/default-image.yaml" ||
  die "the chart's default image is not localhost/troupe:$package_version"
say "default image localhost/troupe:$package_version"

printf '\n=== charts/troupe/README.md names every value\n'
"$KV_VENV/bin/python" - "$CHART" <<'PY' || die "charts/troupe/README.md misses values"
import json, pathlib, sys, yaml
chart = pathlib.Path(sys.argv[1])
readme = (chart / "README.md").read_text()
schema = json.loads((chart / "values.schema.json").read_text())
def paths(node, prefix=""):
    # Leaves of the schema's object tree; free-form maps (no properties) count as one value.
    props = node.get("properties")
    if not props or prefix == "config." or (prefix.startswith("probes.") and prefix != "probes."):
        yield prefix.rstrip(".")
        return
    for key, sub in props.items():
        yield from paths(sub, f"{prefix}{key}.")
missing = [p for p in paths(schema) if p and f"`{p}`" not in readme]
for name in schema["properties"]["config"]["properties"]:
    if f"`{name}`" not in readme:
        missing.append(f"config.{name}")
if missing:
    print("chart-check: not in charts/troupe/README.md: " + ", ".join(missing), file=sys.stderr)
    sys.exit(1)
print(f"chart-check: README names all {sum(1 for _ in paths(schema))} values")
PY

printf '\n=== chart check passed\n'
