#!/usr/bin/env python3
"""Splits the specs of an e2e.test dry run into N shards of similar size.

Reads the Ginkgo JSON report of `e2e.test --ginkgo.dry-run` (the selected
specs are those reported "passed") and writes one focus regexp per line:
the full names of the shard's specs, escaped for Go's regexp (not
anchored: Ginkgo matches focus against more than the name).
Without the ginkgo CLI e2e.test cannot run specs in parallel itself; run.sh
runs one e2e.test per shard instead (each spec in its own namespace).
The specs of an Ordered container go to one shard together.
"""
import json
import os
import subprocess
import sys

SPECIAL = set("\\.+*?()|[]{}^$")


def escape(s):
    return "".join("\\" + c if c in SPECIAL else c for c in s)


def modcache():
    """The Go module cache, where the suite's sources are (its report
    names them relative to it: the binaries are built with -trimpath)."""
    try:
        return subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def is_ordered(loc, root, cache={}):
    """Whether the container declared at loc is an Ordered one: its
    declaration (from its line to its func) names Ordered. The dry run's
    report does not say so itself."""
    path = os.path.join(root, loc["FileName"])
    if path not in cache:
        try:
            with open(path) as f:
                cache[path] = f.read().split("\n")
        except OSError:
            cache[path] = None
    lines = cache[path]
    if not lines:
        return False
    i = loc["LineNumber"] - 1
    decl = " ".join(lines[i:i + 5])
    decl = decl[: decl.find("func(") if "func(" in decl else len(decl)]
    return "Ordered" in decl


def main():
    report, n = sys.argv[1], int(sys.argv[2])
    with open(report) as f:
        suites = json.load(f)
    root = modcache()
    # The specs of one Ordered container share state (its first spec runs
    # the pod, the others read its results): they stay in one shard, as a
    # group keyed by the containers down to the Ordered one; every other
    # spec is a group alone.
    groups = {}
    for suite in suites:
        for s in suite.get("SpecReports") or []:
            if s.get("State") != "passed" or s.get("LeafNodeType") != "It":
                continue
            texts = s.get("ContainerHierarchyTexts") or []
            name = " ".join(texts) + " " + s["LeafNodeText"]
            key = name
            for depth, loc in enumerate(s.get("ContainerHierarchyLocations") or []):
                if is_ordered(loc, root):
                    key = "ordered: " + " ".join(texts[: depth + 1])
                    break
            groups.setdefault(key, []).append(name)
    # Largest groups first, each to the shard with the fewest specs (ties
    # to the lowest index): shards of similar size, the same on every run.
    shards = [[] for _ in range(n)]
    for key in sorted(groups, key=lambda k: (-len(groups[k]), k)):
        min(shards, key=len).extend(groups[key])
    for shard in shards:
        if shard:
            print("(" + "|".join(escape(x) for x in sorted(shard)) + ")")


if __name__ == "__main__":
    main()
