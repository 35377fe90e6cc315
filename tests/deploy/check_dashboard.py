#!/usr/bin/env python3
"""Checks Grafana dashboards against the metrics vigild exports: every metric name in every PromQL
expression (panel targets, nested rows, template variable queries) must be one vigild exports, so a
renamed or mistyped metric fails here instead of drawing an empty panel. Also: the dashboard has a
Prometheus datasource variable and every panel and target uses it.

The exported names come from vigild's own registry: METRICS_TOOL (tests/tools/metric_names.cpp)
builds vigild's Metrics and prints its /metrics text, whose HELP/TYPE lines name every family even
before it has series; a histogram exports NAME_bucket, NAME_sum and NAME_count.

Usage: check_dashboard.py --metrics-tool PATH DASHBOARD.json...
       check_dashboard.py --metrics-tool PATH --self-test   (the checker finds planted mistakes)
Exit status: 0 when every dashboard passes, 1 with one line per problem otherwise."""
import argparse
import json
import re
import subprocess
import sys

# PromQL words that are not metric names: operators, modifiers, aggregation clauses.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
            "offset", "inf", "nan", "atan2", "start", "end"}


def exported_names(exposition):
    """Every sample name the exposition text can carry, from its TYPE lines."""
    names = set()
    for line in exposition.splitlines():
        m = re.match(r"# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$", line)
        if not m:
            continue
        name, kind = m.groups()
        if kind == "histogram":
            names |= {name + "_bucket", name + "_sum", name + "_count"}
        elif kind == "summary":
            names |= {name, name + "_sum", name + "_count"}
        else:
            names.add(name)
    return names


def metric_names(expr):
    """The metric names EXPR selects. Strings, label matchers ({...}), ranges ([...]), label lists
    of by/without/on/ignoring/group_left/group_right and Grafana variables are not metric names;
    an identifier followed by '(' is a function or an aggregation."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    s = re.sub(r"\$\{[^}]*\}|\$[a-zA-Z_][a-zA-Z0-9_]*", " ", s)
    names = []
    pos = 0
    token = re.compile(r"\s+|(?P<num>(?:0x[0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)(?:ms|[smhdwy])?)"
                       r"|(?P<id>[a-zA-Z_:][a-zA-Z0-9_:]*)|(?P<other>.)")
    while pos < len(s):
        m = token.match(s, pos)
        pos = m.end()
        ident = m.group("id")
        if not ident or ident.lower() in KEYWORDS:
            continue
        if re.match(r"\s*\(", s[pos:]):
            continue  # a function or an aggregation
        names.append(ident)
    return names


def label_values_metric(query):
    """The metric of a template variable's label_values(METRIC, label) or query_result(EXPR)."""
    m = re.match(r"\s*label_values\s*\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$", query)
    if m:
        return m.group(1)
    m = re.match(r"\s*query_result\s*\((.*)\)\s*$", query)
    return m.group(1) if m else None


def all_panels(panels):
    for p in panels:
        yield p
        yield from all_panels(p.get("panels", []))


def check(dashboard, exported, where):
    problems = []
    variables = dashboard.get("templating", {}).get("list", [])
    sources = [v["name"] for v in variables if v.get("type") == "datasource" and v.get("query") == "prometheus"]
    if not sources:
        problems.append(f"{where}: no Prometheus datasource variable (templating: type datasource, query prometheus)")
    allowed = {f"${n}" for n in sources} | {f"${{{n}}}" for n in sources}

    def uses_variable(ds, what):
        uid = ds.get("uid") if isinstance(ds, dict) else ds
        if uid not in allowed:
            problems.append(f"{where}: {what} does not use the datasource variable (uses {uid!r})")

    def check_expr(expr, what):
        found = metric_names(expr)
        if not found:
            problems.append(f"{where}: {what}: names no metric: {expr}")
        for name in found:
            if name not in exported:
                problems.append(f"{where}: {what}: '{name}' is not a metric vigild exports: {expr}")

    count = 0
    for p in all_panels(dashboard.get("panels", [])):
        if p.get("type") == "row":
            continue
        what = f"panel '{p.get('title', p.get('id'))}'"
        uses_variable(p.get("datasource"), what)
        if not p.get("targets"):
            problems.append(f"{where}: {what} has no query")
        for t in p.get("targets", []):
            uses_variable(t.get("datasource", p.get("datasource")), what + f" target {t.get('refId')}")
            if "expr" not in t:
                problems.append(f"{where}: {what} target {t.get('refId')} has no expr")
                continue
            check_expr(t["expr"], what)
            count += 1
    for v in variables:
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        inner = label_values_metric(q)
        if inner is None:
            problems.append(f"{where}: variable '{v.get('name')}': query not understood: {q}")
        else:
            check_expr(inner, f"variable '{v.get('name')}'")
    if count == 0:
        problems.append(f"{where}: no PromQL expression at all")
    return problems


def self_test(exported):
    """The checker must pass a good dashboard and find each planted mistake."""
    failures = []
    assert "vigil_interactive_read_seconds_bucket" in exported, "the histogram's _bucket is exported"
    cases = {
        "rate(vigil_disk_cycles_total{disk=~\"$disk\"}[5m])": ["vigil_disk_cycles_total"],
        "histogram_quantile(0.99, sum by (le, disk) (rate(vigil_interactive_read_seconds_bucket[$__rate_interval])))":
            ["vigil_interactive_read_seconds_bucket"],
        "sum without (camera) (vigil_camera_up) / on (disk) group_left(state) vigil_disk_state == bool 1e3":
            ["vigil_camera_up", "vigil_disk_state"],
        'count(vigil_camera_up{camera="a b (c)"} == 0) or vector(0)': ["vigil_camera_up"],
    }
    for expr, want in cases.items():
        got = metric_names(expr)
        if got != want:
            failures.append(f"metric_names({expr!r}) = {got}, want {want}")

    ds = {"type": "prometheus", "uid": "${datasource}"}
    variables = {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"}]}

    def dash(*exprs, nested=None, variable=None):
        d = {"templating": {"list": list(variables["list"])},
             "panels": [{"type": "timeseries", "title": f"p{i}", "datasource": ds,
                         "targets": [{"refId": "A", "datasource": ds, "expr": e}]} for i, e in enumerate(exprs)]}
        if nested:
            d["panels"].append({"type": "row", "title": "r", "panels": [
                {"type": "timeseries", "title": "nested", "datasource": ds,
                 "targets": [{"refId": "A", "datasource": ds, "expr": nested}]}]})
        if variable:
            d["templating"]["list"].append({"name": "v", "type": "query", "query": {"query": variable}})
        return d

    good = dash("rate(vigil_disk_cycles_total[5m])", "vigil_camera_up",
                nested="histogram_quantile(0.5, sum by (le) (rate(vigil_interactive_read_seconds_bucket[5m])))",
                variable="label_values(vigil_disk_cycles_total, disk)")
    if check(good, exported, "good"):
        failures.append(f"a good dashboard was refused: {check(good, exported, 'good')}")
    bad = {
        "an unknown metric": dash("rate(vigil_no_such_metric_total[5m])"),
        "an unknown metric in a nested row": dash("vigil_camera_up", nested="vigil_camera_upp"),
        "a histogram without its suffix": dash("rate(vigil_interactive_read_seconds[5m])"),
        "a counter given a histogram suffix": dash("vigil_disk_cycles_total_bucket"),
        "an unknown metric in a variable": dash("vigil_camera_up", variable="label_values(vigil_nope, disk)"),
        "no datasource variable": {"panels": dash("vigil_camera_up")["panels"]},
        "a fixed datasource": {"templating": variables, "panels": [
            {"type": "stat", "title": "x", "datasource": {"uid": "prom-1"},
             "targets": [{"refId": "A", "expr": "vigil_camera_up"}]}]},
    }
    for why, d in bad.items():
        if not check(d, exported, why):
            failures.append(f"not caught: {why}")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--metrics-tool", required=True, help="prints vigild's /metrics text (tests/tools/metric_names)")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("dashboards", nargs="*")
    args = ap.parse_args()
    text = subprocess.run([args.metrics_tool], check=True, capture_output=True, text=True).stdout
    exported = exported_names(text)
    if len(exported) < 20:
        print(f"only {len(exported)} metric names from {args.metrics_tool}: not vigild's /metrics", file=sys.stderr)
        return 1
    if args.self_test:
        failures = self_test(exported)
        for f in failures:
            print("self-test:", f, file=sys.stderr)
        print("self-test:", "FAILED" if failures else "ok")
        return 1 if failures else 0
    if not args.dashboards:
        ap.error("no dashboard given")
    problems = []
    for path in args.dashboards:
        with open(path) as f:
            problems += check(json.load(f), exported, path)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(args.dashboards)} dashboard(s): {'FAILED' if problems else 'ok'} ({len(exported)} exported names)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
