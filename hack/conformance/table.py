#!/usr/bin/env python3
"""Prints the table of one conformance run from the JUnit XML e2e.test wrote.

Counts the specs the run selected (same focus and skip as e2e.test, applied
to the spec names): passed, failed (with the first line of the failure),
skipped by the spec itself (with why), not applicable (their images or
infrastructure cannot exist here; from not-applicable.txt), and the wall time.
"""
import argparse
import glob
import re
import sys
import xml.etree.ElementTree as ET


def first_line(text):
    """The first non-empty line of a failure message, without Ginkgo's tag."""
    for line in (text or "").splitlines():
        line = line.strip().removeprefix("[FAILED]").strip()
        if line:
            return line[:200]
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--junit", required=True, help="report directory")
    ap.add_argument("--focus", required=True)
    ap.add_argument("--skip", required=True, help="skip regexp without the not-applicable specs")
    ap.add_argument("--not-applicable", required=True)
    ap.add_argument("--wall", type=int, default=0)
    ap.add_argument("--title", default="conformance", help="what the first line calls the run")
    a = ap.parse_args()
    na = []
    with open(a.not_applicable) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                rx, _, why = line.rstrip("\n").partition("\t")
                na.append((re.compile(rx), why.strip()))
    focus, skip = re.compile(a.focus), re.compile(a.skip)
    rows = {"passed": [], "failed": [], "skipped": [], "not applicable": []}
    files = sorted(glob.glob(a.junit + "/**/junit*.xml", recursive=True))
    if not files:
        print(f"no JUnit report in {a.junit}", file=sys.stderr)
        return 1
    # Shards' reports may list the same spec: a result beats a skip.
    results = {}
    for path in files:
        for tc in ET.parse(path).getroot().iter("testcase"):
            name = tc.get("name", "")
            text = name.removeprefix("[It] ")
            if not name.startswith("[It]") or not focus.search(text) or skip.search(text):
                continue
            if text in results and (tc.find("skipped") is not None or tc.get("status") == "skipped"):
                continue
            results[text] = tc
    for text, tc in results.items():
        reason = next((why for rx, why in na if rx.search(text)), None)
        secs = float(tc.get("time", "0"))
        # Ginkgo writes a failed or timed-out spec as <failure>, a panicked
        # or interrupted one as <error>: both are failures.
        failure = tc.find("failure")
        if failure is None:
            failure = tc.find("error")
        skipped = tc.find("skipped")
        if reason is not None:
            rows["not applicable"].append((text, reason, secs))
        elif failure is not None:
            rows["failed"].append((text, first_line(failure.get("message") or failure.text), secs))
        elif skipped is not None or tc.get("status") == "skipped":
            rows["skipped"].append((text, first_line(skipped.get("message") if skipped is not None else ""), secs))
        else:
            rows["passed"].append((text, "", secs))
    total = sum(len(v) for v in rows.values())
    applicable = total - len(rows["not applicable"])
    print(f"{a.title}: {total} specs selected, wall time {a.wall // 60} min {a.wall % 60} s")
    for kind in ("passed", "failed", "skipped", "not applicable"):
        print(f"\n{kind}: {len(rows[kind])}")
        for text, why, secs in sorted(rows[kind]):
            print(f"  {secs:7.1f}s  {text}" + (f"\n             -> {why}" if why else ""))
    if applicable:
        print(f"\npass rate: {len(rows['passed'])}/{applicable} applicable "
              f"({100 * len(rows['passed']) / applicable:.0f} %)")
    return 0 if not rows["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
