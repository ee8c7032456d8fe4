#!/usr/bin/env python3
"""Splits the specs of an e2e.test dry run into N shards of similar size.

Reads the Ginkgo JSON report of `e2e.test --ginkgo.dry-run` (the selected
specs are those reported "passed") and writes one focus regexp per line:
the full names of the shard's specs, escaped for Go's regexp (not
anchored: Ginkgo matches focus against more than the name).
Without the ginkgo CLI e2e.test cannot run specs in parallel itself; run.sh
runs one e2e.test per shard instead (each spec in its own namespace).
"""
import json
import sys

SPECIAL = set("\\.+*?()|[]{}^$")


def escape(s):
    return "".join("\\" + c if c in SPECIAL else c for c in s)


def main():
    report, n = sys.argv[1], int(sys.argv[2])
    with open(report) as f:
        suites = json.load(f)
    names = sorted(
        " ".join(s.get("ContainerHierarchyTexts") or []) + " " + s["LeafNodeText"]
        for suite in suites
        for s in suite.get("SpecReports") or []
        if s.get("State") == "passed" and s.get("LeafNodeType") == "It"
    )
    shards = [names[i::n] for i in range(n)]
    for shard in shards:
        if shard:
            print("(" + "|".join(escape(x) for x in shard) + ")")


if __name__ == "__main__":
    main()
