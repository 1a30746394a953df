#!/usr/bin/env python3
"""Counts the walkers a run flagged stuck, and how long their spells lasted.

    scripts/stuck_spells.py RUN_DIR [RUN_DIR ...]

Reads each folder's trajectories.csv (as `crowdfield run ... --out RUN_DIR` writes it) and prints,
per folder, how many agents were in state `Stuck` at one step or more, how many spells (runs of
consecutive `Stuck` rows of one agent) there were, and the median, 90th percentile and longest
spell in planner steps. The figures in docs/steering.md on what the stuck rule flags in dense crowds come
from this.
"""

import csv
import pathlib
import sys


def spells(path: pathlib.Path) -> dict[int, list[int]]:
    """Each agent's stuck spells, in steps, in the order they happened."""
    states: dict[int, list[str]] = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            states.setdefault(int(row["agent"]), []).append(row["state"])
    out: dict[int, list[int]] = {}
    for agent, rows in states.items():
        run = 0
        for state in rows + [""]:
            if state == "Stuck":
                run += 1
            elif run:
                out.setdefault(agent, []).append(run)
                run = 0
    return out


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for folder in sys.argv[1:]:
        found = spells(pathlib.Path(folder) / "trajectories.csv")
        lengths = sorted(n for runs in found.values() for n in runs)
        if not lengths:
            print(f"{folder}: no agent stuck")
            continue
        median = lengths[len(lengths) // 2]
        p90 = lengths[int(len(lengths) * 0.9)]
        print(
            f"{folder}: {len(found)} agents stuck at some step, {len(lengths)} spells, "
            f"median {median}, 90th percentile {p90}, longest {lengths[-1]} steps"
        )


if __name__ == "__main__":
    main()
