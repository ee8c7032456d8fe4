#!/usr/bin/env python3
"""Prints hack/bench-real's results side by side: per agent the median and
the range over runs of every figure TestPodStartAndDeleteFigures recorded
(one JSON line per run), and the ratio kubelet / lockstep of the medians.
Usage: report.py results.jsonl"""
import json
import statistics
import sys


def load(path):
    by_agent = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                r = json.loads(line)
                by_agent.setdefault(r["agent"], []).append(r)
    return by_agent


def cell(values, fmt):
    if not values:
        return "-", None
    med = statistics.median(values)
    if len(values) == 1:
        return fmt.format(med), med
    return f"{fmt.format(med)} ({fmt.format(min(values))}–{fmt.format(max(values))})", med


def main():
    by_agent = load(sys.argv[1])
    agents = sorted(by_agent, key=lambda a: (a != "lockstep", a))
    rows = [
        ("pod start p50 (s)", lambda r: r["start_p50_ms"] / 1000, "{:.2f}"),
        ("pod start p99 (s)", lambda r: r["start_p99_ms"] / 1000, "{:.2f}"),
        ("20 deletions until all pods gone (s)", lambda r: r["delete_ms"] / 1000, "{:.2f}"),
        ("deletes begun → containerd holds nothing (s)", lambda r: r["cri_empty_ms"] / 1000, "{:.1f}"),
        ("agent CPU, first create → last pod gone (CPU-s)", lambda r: r["agent_cpu_s"], "{:.2f}"),
        ("agent peak RSS in that window (MiB)", lambda r: r["agent_peak_rss_mib"], "{:.0f}"),
        ("kube-apiserver CPU in that window (CPU-s)", lambda r: r["apiserver_cpu_s"], "{:.2f}"),
        ("containerd CPU in that window (CPU-s)", lambda r: r["containerd_cpu_s"], "{:.2f}"),
    ]
    for key, what in (("req_per_pod_start", "agent requests per pod started"),
                      ("req_per_pod_delete", "agent requests per pod deleted"),
                      ("apiserver_pod_req_per_pod_start", "apiserver pod requests per pod started (all clients)"),
                      ("apiserver_pod_req_per_pod_delete", "apiserver pod requests per pod deleted (all clients)")):
        methods = sorted({m for rs in by_agent.values() for r in rs for m in (r.get(key) or {})})
        rows.append((f"{what}, total", lambda r, k=key: sum((r.get(k) or {}).values()), "{:.2f}"))
        for m in methods:
            rows.append((f"  {m}", lambda r, k=key, m=m: (r.get(k) or {}).get(m, 0.0), "{:.2f}"))

    runs = ", ".join(f"{a} {len(by_agent[a])}" for a in agents)
    print(f"bench-real: 20 busybox pods, the same containerd + kube-apiserver; median (min–max) over runs ({runs})")
    header = ["figure"] + agents
    ratio = "lockstep" in by_agent and len(agents) > 1
    if ratio:
        header += [f"{a} / lockstep" for a in agents if a != "lockstep"]
    table = [header]
    for name, get, fmt in rows:
        line, meds = [name], {}
        for a in agents:
            text, meds[a] = cell([get(r) for r in by_agent[a]], fmt)
            line.append(text)
        if ratio:
            for a in agents:
                if a == "lockstep":
                    continue
                base, other = meds.get("lockstep"), meds.get(a)
                if base and other is not None:
                    line.append(f"{other / base:.2f}×")
                elif base == 0 and other:
                    line.append("(lockstep 0)")
                else:
                    line.append("-")
        table.append(line)
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(c.ljust(widths[j]) for j, c in enumerate(row)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


if __name__ == "__main__":
    main()
