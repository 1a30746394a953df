#!/usr/bin/env python3
"""Writes copies of assets/scenarios/hallway-two-way.scenario.ron with other crowd sizes.

    scripts/hallway_sizes.py OUT_DIR [TOTAL ...]

Each copy keeps the hallway, the start and goal regions, the region seeds and the keep-right
behaviour, and changes only how many walkers start in each end (TOTAL / 2 per end; default
totals 10 20 40 80 120 160 200 300). `crowdfield bench OUT_DIR/*.ron` then compares crowdfield
with ORCA over crowd size on one geometry (docs/benchmarks.md, crowd size).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "assets" / "scenarios" / "hallway-two-way.scenario.ron"


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    try:
        totals = [int(t) for t in sys.argv[2:]] or [10, 20, 40, 80, 120, 160, 200, 300]
    except ValueError as e:
        sys.exit(f"not a walker count: {e}")
    text = SOURCE.read_text()
    if text.count("count: 100,") != 2:
        sys.exit(f"{SOURCE}: expected two regions of 100 walkers")
    out.mkdir(parents=True, exist_ok=True)
    for total in totals:
        if total < 2 or total % 2:
            sys.exit(f"{total}: give an even total of at least 2")
        name = f"hallway-{total}"
        copy = text.replace("count: 100,", f"count: {total // 2},")
        copy = re.sub(r'name: "hallway-two-way"', f'name: "{name}"', copy, count=1)
        (out / f"{name}.scenario.ron").write_text(copy)
        print(out / f"{name}.scenario.ron")


if __name__ == "__main__":
    main()
