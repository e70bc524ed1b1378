"""Checks the chart's Grafana dashboard and PrometheusRule offline
(scripts/chart-check.sh runs it):

- the dashboard JSON (charts/troupe/dashboards/troupe.json) parses, has
  panels, and the rendered ConfigMap carries it unchanged with the sidecar's
  label;
- the rendered PrometheusRule has the operator's shape (apiVersion, kind,
  spec.groups[].rules[] each with alert and expr, for as a duration);
- every PromQL expression, in the dashboard and the rules, names only metrics
  Troupe exports: the names given (from core/prometheus-metrics.ts), a
  histogram's _bucket/_count/_sum series included.

Usage: check_monitoring.py DASHBOARD.json RENDERED.yaml METRIC_NAME...
exits 1 on any failure.
"""
import json
import pathlib
import re
import sys

import yaml

# PromQL's functions, aggregations, keywords and modifiers: what an
# identifier outside braces may be besides a metric name.
PROMQL_WORDS = {
    "sum", "avg", "min", "max", "count", "rate", "irate", "increase", "delta", "histogram_quantile",
    "clamp_min", "clamp_max", "abs", "by", "without", "on", "ignoring", "group_left", "group_right",
    "bool", "and", "or", "unless", "label_values", "topk", "bottomk", "offset", "time", "vector",
    "avg_over_time", "max_over_time", "min_over_time", "sum_over_time", "absent", "le", "inf", "nan",
}
SUFFIXES = ("_bucket", "_count", "_sum")


def metric_names(expr):
    """The identifiers of an expression that can only be metric names."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings (label values, legends)
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)  # grouping labels
    text = re.sub(r"\$\{?\w+\}?", "", text)  # Grafana variables
    text = re.sub(r"label_values\(([^,()]+),\s*\w+\)", r"\1", text)  # Grafana's label_values(metric, label)
    words = re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text)
    return [w for w in words if w.lower() not in PROMQL_WORDS and not re.fullmatch(r"[0-9.e+-]+", w)]


def known(name, exported):
    if name in exported:
        return True
    return any(name.endswith(s) and name[: -len(s)] in exported for s in SUFFIXES)


def main():
    dashboard_path, rendered_path, *exported_list = sys.argv[1:]
    exported = set(exported_list)
    problems = []
    if not exported:
        problems.append("no exported metric names were given")
    dashboard_text = pathlib.Path(dashboard_path).read_text()
    try:
        dashboard = json.loads(dashboard_text)
    except json.JSONDecodeError as error:
        sys.exit(f"check_monitoring: {dashboard_path} is not JSON: {error}")
    panels = dashboard.get("panels") or []
    if not panels:
        problems.append("the dashboard has no panels")
    exprs = [("dashboard panel " + str(p.get("title")), t["expr"]) for p in panels for t in p.get("targets", [])]
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") == "query":
            exprs.append(("dashboard variable " + var["name"], var["query"]))

    docs = [d for d in yaml.safe_load_all(pathlib.Path(rendered_path).read_text()) if d]
    maps = [d for d in docs if d["kind"] == "ConfigMap" and "troupe.json" in (d.get("data") or {})]
    if len(maps) != 1:
        problems.append(f"expected one ConfigMap carrying troupe.json, found {len(maps)}")
    else:
        if json.loads(maps[0]["data"]["troupe.json"]) != dashboard:
            problems.append("the ConfigMap's troupe.json is not the dashboard file")
        if maps[0]["metadata"].get("labels", {}).get("grafana_dashboard") != "1":
            problems.append("the dashboard ConfigMap lacks the grafana_dashboard label")
    rules = [d for d in docs if d["kind"] == "PrometheusRule"]
    if len(rules) != 1:
        problems.append(f"expected one PrometheusRule, found {len(rules)}")
    for rule in rules:
        if rule.get("apiVersion") != "monitoring.coreos.com/v1":
            problems.append(f"PrometheusRule apiVersion {rule.get('apiVersion')}")
        groups = (rule.get("spec") or {}).get("groups")
        if not isinstance(groups, list) or not groups:
            problems.append("PrometheusRule spec.groups is not a non-empty list")
            continue
        for group in groups:
            if not isinstance(group.get("name"), str) or not isinstance(group.get("rules"), list) or not group["rules"]:
                problems.append(f"group {group.get('name')!r} needs a name and rules")
                continue
            for r in group["rules"]:
                extra = set(r) - {"alert", "record", "expr", "for", "labels", "annotations", "keep_firing_for"}
                if extra:
                    problems.append(f"rule {r.get('alert')}: unknown fields {sorted(extra)}")
                if not isinstance(r.get("alert"), str) or not isinstance(r.get("expr"), str):
                    problems.append(f"rule {r}: alert and expr must be strings")
                    continue
                if "for" in r and not re.fullmatch(r"[0-9]+(ms|s|m|h|d|w|y)", str(r["for"])):
                    problems.append(f"rule {r['alert']}: for {r['for']!r} is not a duration")
                for key in ("labels", "annotations"):
                    if not all(isinstance(v, str) for v in (r.get(key) or {}).values()):
                        problems.append(f"rule {r['alert']}: {key} values must be strings")
                exprs.append(("rule " + r["alert"], r["expr"]))

    for where, expr in exprs:
        names = metric_names(expr)
        if not names:
            problems.append(f"{where}: names no metric: {expr}")
        for name in names:
            if not known(name, exported):
                problems.append(f"{where}: {name} is not a metric Troupe exports")
    if problems:
        for p in problems:
            print("check_monitoring: " + p, file=sys.stderr)
        sys.exit(1)
    print(f"check_monitoring: {len(panels)} panels, {sum(len(g['rules']) for r in rules for g in r['spec']['groups'])} rules, {len(exprs)} expressions, every metric exported")


if __name__ == "__main__":
    main()
