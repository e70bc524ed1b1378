"""Checks that a rendered Troupe chart wires Troupe and its sidecar together
the way `npm run cluster` does (scripts/cluster.ts, test/support/dapr-cluster.ts):
what schema validation cannot see.

- daprd's app port (dapr.io/app-port) is Troupe's ACTOR_CALLBACK_PORT, and not
  the public port; the container port is PORT; TROUPE_MODE is dapr;
- the probes ask /healthz and /readyz on the public port;
- dapr.io/config names a rendered Configuration;
- exactly one rendered component is the actor state store, every component is
  scoped to the app id, and the components' redisHost is REDIS_URL's host;
- the Service and the PodDisruptionBudget select the Deployment's pods;
- no secret setting is a plain value (provider keys, S3 keys, Redis password).

Usage: PROVIDER_SECRET_SETTINGS="OPENAI_API_KEY …" python chart_consistency.py RENDERED.yaml...
exits 1 on any failure.
"""
import os
import pathlib
import sys
from urllib.parse import urlsplit

import yaml

# Provider keys come from providers/registry.ts (chart-check.sh passes them); the rest are the chart's own.
PROVIDER_SECRETS = os.environ.get("PROVIDER_SECRET_SETTINGS", "").split()
if not PROVIDER_SECRETS:
    sys.exit("chart_consistency.py: PROVIDER_SECRET_SETTINGS (the providers' secret settings) is not set")
SECRET_SETTINGS = set(PROVIDER_SECRETS) | {"S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "REDIS_PASSWORD", "WEBHOOK_SECRET_KEY"}


def check(path):
    docs = [d for d in yaml.safe_load_all(pathlib.Path(path).read_text()) if d]
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    problems = []
    expect = lambda ok, message: ok or problems.append(message)

    [deployment] = by_kind["Deployment"]
    pod = deployment["spec"]["template"]
    annotations = pod["metadata"]["annotations"]
    [container] = [c for c in pod["spec"]["containers"] if c["name"] == "troupe"]
    env = {e["name"]: e for e in container["env"]}
    value = lambda name: env.get(name, {}).get("value")
    app_id = annotations.get("dapr.io/app-id")

    expect(annotations.get("dapr.io/enabled") == "true", "dapr.io/enabled is not \"true\"")
    expect(value("TROUPE_MODE") == "dapr", "TROUPE_MODE is not dapr")
    expect(annotations.get("dapr.io/app-port") == value("ACTOR_CALLBACK_PORT"),
           f"dapr.io/app-port {annotations.get('dapr.io/app-port')} != ACTOR_CALLBACK_PORT {value('ACTOR_CALLBACK_PORT')}")
    expect(value("ACTOR_CALLBACK_PORT") != value("PORT"), "the actor callback port is the public port")
    [http] = [p for p in container["ports"] if p["name"] == "http"]
    expect(str(http["containerPort"]) == value("PORT"), f"containerPort {http['containerPort']} != PORT {value('PORT')}")
    for probe, path_ in [("livenessProbe", "/healthz"), ("startupProbe", "/healthz"), ("readinessProbe", "/readyz")]:
        get = container.get(probe, {}).get("httpGet", {})
        expect(get.get("path") == path_ and get.get("port") == "http", f"{probe} does not ask {path_} on the http port")
    expect(annotations.get("dapr.io/app-health-check-path") == "/healthz", "daprd's app health check is not /healthz")

    configurations = [c["metadata"]["name"] for c in by_kind.get("Configuration", [])]
    expect(annotations.get("dapr.io/config") in configurations, f"dapr.io/config {annotations.get('dapr.io/config')} is not among {configurations}")

    components = by_kind.get("Component", [])
    meta = lambda c: {m["name"]: m for m in c["spec"]["metadata"]}
    state_stores = [c for c in components if meta(c).get("actorStateStore", {}).get("value") == "true"]
    expect(len(state_stores) == 1, f"{len(state_stores)} actor state stores (exactly one is needed)")
    redis_host = urlsplit(value("REDIS_URL") or "").netloc.rsplit("@", 1)[-1]
    for c in components:
        name = c["metadata"]["name"]
        expect(c.get("scopes") == [app_id], f"component {name} is not scoped to {app_id}")
        expect(meta(c).get("redisHost", {}).get("value") == redis_host, f"component {name}'s redisHost is not REDIS_URL's {redis_host}")
        password = meta(c).get("redisPassword")
        expect(password is None or "secretKeyRef" in password, f"component {name} has a plain redisPassword")

    selector = deployment["spec"]["selector"]["matchLabels"]
    expect(all(pod["metadata"]["labels"].get(k) == v for k, v in selector.items()), "the Deployment's selector misses its pods")
    for kind, get_selector in [("Service", lambda s: s["spec"]["selector"]), ("PodDisruptionBudget", lambda s: s["spec"]["selector"]["matchLabels"])]:
        for item in by_kind.get(kind, []):
            expect(get_selector(item) == selector, f"the {kind} does not select the Deployment's pods")
    for name in SECRET_SETTINGS & env.keys():
        expect("valueFrom" in env[name], f"{name} is a plain value, not from a Secret")

    for p in problems:
        print(f"FAIL {path}: {p}")
    if not problems:
        print(f"ok   {path}: app port {value('ACTOR_CALLBACK_PORT')} = ACTOR_CALLBACK_PORT, public port {value('PORT')}, "
              f"{len(components)} components scoped to {app_id}, configuration {annotations.get('dapr.io/config')}")
    return not problems


if __name__ == "__main__":
    results = [check(p) for p in sys.argv[1:]]
    sys.exit(0 if results and all(results) else 1)
