#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks the Grafana dashboard the package ships
(packaging/grafana/mysqltrace-dashboard.json): valid JSON; every panel with a
title, a place and the data source variable; every metric its queries name
one the agent exports (the exact page of tests/unit/expected/
agent_metrics.prom, which agent_metrics_test checks against the renderer);
every query valid PromQL for Prometheus's own parser (promtool check rules,
with Grafana's variables given values).

usage: check_grafana_dashboard.py DASHBOARD.json EXPECTED_PAGE.prom"""
import json
import re
import subprocess
import sys
import tempfile


def main():
    dashboard_path, page_path = sys.argv[1], sys.argv[2]
    with open(dashboard_path, encoding="utf-8") as f:
        dash = json.load(f)
    exported = set()
    with open(page_path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("# TYPE "):
                name, kind = line.split()[2:4]
                exported.add(name)
                if kind == "histogram":
                    exported.update(name + s for s in ("_bucket", "_sum", "_count"))
    problems = []
    exprs = []
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            exprs.append(("variable " + var["name"], var["definition"]))
    for p in dash["panels"]:
        if p["type"] == "row":
            continue
        title = p.get("title", "")
        if not title or "gridPos" not in p:
            problems.append(f"panel {p!r:.80}: no title or place")
        if p.get("datasource", {}).get("uid") != "${datasource}":
            problems.append(f"panel {title}: not on the ${{datasource}} variable")
        if not p.get("targets"):
            problems.append(f"panel {title}: no query")
        for t in p.get("targets", []):
            exprs.append((f"panel {title}", t["expr"]))
    for where, expr in exprs:
        names = set(re.findall(r"\b((?:mysqltrace|process)_[A-Za-z0-9_]+)", expr))
        if not names:
            problems.append(f"{where}: names no metric of the agent: {expr}")
        for n in sorted(names - exported):
            problems.append(f"{where}: {n} is not a metric the agent exports")
    # Every query as a recording rule: promtool parses each with
    # Prometheus's own PromQL parser (a JSON file is YAML).
    rules = {"groups": [{"name": "dashboard", "rules": []}]}
    for i, (where, expr) in enumerate(exprs):
        if where.startswith("variable"):
            continue  # label_values() is Grafana's, not PromQL
        q = expr.replace("$__rate_interval", "1m").replace("$server", ".*")
        rules["groups"][0]["rules"].append({"record": f"dashboard:query{i}", "expr": q})
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
        json.dump(rules, f)
        f.flush()
        r = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True, text=True)
        if r.returncode != 0:
            problems.append("promtool check rules: " + r.stdout + r.stderr)
    for p in problems:
        print("check_grafana_dashboard:", p, file=sys.stderr)
    if problems:
        return 1
    print(f"check_grafana_dashboard: {len(exprs)} queries, "
          f"{len(set(re.findall(r'(?:mysqltrace|process)_[A-Za-z0-9_]+', ' '.join(e for _, e in exprs))))} "
          "metrics, all exported and valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
