#!/usr/bin/env python3
"""Prints a Markdown table of the criterion results under target/criterion (or $1).

Reads each benchmark's new/estimates.json (median) and new/benchmark.json (throughput), so the
figures in docs/field.md come straight from the last `cargo bench` run.
"""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
rows = []
for bench in sorted(root.glob("**/new/benchmark.json")):
    meta = json.loads(bench.read_text())
    est = json.loads((bench.parent / "estimates.json").read_text())
    ns = est["median"]["point_estimate"]
    thr = meta.get("throughput") or {}
    elems = thr.get("Elements")
    rate = f"{elems / ns * 1e3:,.0f} M/s" if elems else ""
    if ns >= 1e6:
        t = f"{ns / 1e6:,.2f} ms"
    elif ns >= 1e3:
        t = f"{ns / 1e3:,.2f} µs"
    else:
        t = f"{ns:,.0f} ns"
    rows.append((meta["full_id"], t, rate))
print("| benchmark | median time | cell updates |")
print("|---|---|---|")
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]} |")
