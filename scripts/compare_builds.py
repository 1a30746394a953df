#!/usr/bin/env python3
"""Compares the bare crowd's speed of two commits, their runs taken in turn.

    scripts/compare_builds.py REV_A REV_B SCENARIO... [--threads 2] [--runs 3] [--rounds 4]

Builds the `crowd_steps` example of each commit (a detached worktree under target/compare, one
target directory shared by both so dependencies build once), then runs the two binaries
alternately, `--rounds` times each, on every scenario. Each run of `crowd_steps` steps the
scenario's start crowd `--runs` times on `--threads` threads and prints each step's median time
over those runs, summed, as agent-steps per second (its last line); the table gives every round's
figure for both commits and their medians. The order of the two is swapped every round, so a slow
spell of the machine falls on both.

This is the reproducible form of the comparisons of two builds in docs/performance.md. Those were made in one
process, with a hidden switch flipped between alternating runs, which moves less between runs
than two processes do; expect a few percent more spread here. Commits before 45acc91 print no
summary line: their figure is then the median of their runs after the first.
"""
import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORK = ROOT / "target" / "compare"
SUMMARY = re.compile(r"per-step medians summed over \d+ runs, (\d+) agent-steps/s")
RUN = re.compile(r"run \d+ of \d+, .* (\d+) agent-steps/s")


def build(rev: str) -> pathlib.Path:
    """The `crowd_steps` binary of `rev`, built in a detached worktree."""
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--short=12", f"{rev}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        sys.exit(f"not a commit: {rev}")
    sha = found.stdout.strip()
    binary = WORK / "bin" / f"crowd_steps-{sha}"
    if binary.exists():
        return binary
    tree = WORK / "trees" / sha
    if tree.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha], cwd=ROOT, check=True)
    try:
        env = dict(os.environ, CARGO_TARGET_DIR=str(WORK / "target"))
        subprocess.run(
            ["cargo", "build", "--release", "-p", "crowdfield_cli", "--example", "crowd_steps"],
            cwd=tree,
            env=env,
            check=True,
        )
        binary.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(WORK / "target" / "release" / "examples" / "crowd_steps", binary)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    return binary


def figure(binary: pathlib.Path, scenario: str, threads: int, runs: int) -> float:
    """Agent-steps per second of one `crowd_steps` run (see the module doc)."""
    out = subprocess.run(
        [str(binary), scenario, str(threads), str(runs)], check=True, capture_output=True, text=True
    ).stdout
    summary = SUMMARY.findall(out)
    if summary:
        return float(summary[-1])
    per_run = [float(v) for v in RUN.findall(out)]
    if not per_run:
        sys.exit(f"{binary.name} printed no figure for {scenario}:\n{out}")
    return statistics.median(per_run[1:] or per_run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev_a")
    parser.add_argument("rev_b")
    parser.add_argument("scenarios", nargs="+")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    binaries = {rev: build(rev) for rev in (args.rev_a, args.rev_b)}
    scenarios = [str(pathlib.Path(s).resolve()) for s in args.scenarios]
    results = {(rev, s): [] for rev in binaries for s in scenarios}
    for round_ in range(args.rounds):
        order = list(binaries) if round_ % 2 == 0 else list(reversed(binaries))
        for rev in order:
            for s in scenarios:
                results[(rev, s)].append(figure(binaries[rev], s, args.threads, args.runs))
        print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)
    print(f"{args.threads} threads, {args.runs} runs a figure, {args.rounds} rounds (agent-steps/s)\n")
    print(f"| scenario | {args.rev_a} | {args.rev_b} | median change |")
    print("|---|---|---|---|")
    for s in scenarios:
        a, b = results[(args.rev_a, s)], results[(args.rev_b, s)]
        ma, mb = statistics.median(a), statistics.median(b)
        runs = lambda v: ", ".join(f"{x / 1e3:,.0f} k" for x in v)
        name = pathlib.Path(s).name.removesuffix(".scenario.ron")
        print(f"| {name} | {runs(a)} (median {ma / 1e3:,.0f} k) | {runs(b)} (median {mb / 1e3:,.0f} k) "
              f"| {100 * (mb / ma - 1):+.1f} % |")


if __name__ == "__main__":
    main()
