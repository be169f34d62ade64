#!/usr/bin/env python3
"""Draws kram.png from a scripts/bench/kram.sh result directory: KRAM's 4 KiB random IOPS as
ratios to brd and zram (median and spread over repetitions) per vCPU count and transfer mode,
and the swap-bound program's runtime on KRAM as a ratio to zram and to disk swap."""
import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plotlib import finish  # noqa: E402


def bars(a, rows, cols, title, goal):
    """One bar per row (median ratio, min-max error bar) for each (ratio, min, max) column
    index triple in cols, with the goal line."""
    xs = range(len(rows))
    width = 0.8 / len(cols)
    for j, (label, c) in enumerate(cols):
        med = [float(r[c] or 0) for r in rows]
        lo = [m - float(r[c + 1] or 0) for m, r in zip(med, rows)]
        hi = [float(r[c + 2] or 0) - m for m, r in zip(med, rows)]
        a.bar([i + (j - (len(cols) - 1) / 2) * width for i in xs], med, width,
              yerr=[lo, hi], capsize=2, label=label)
    a.axhline(goal, color="black", linestyle="--", linewidth=1, label=f"goal {goal}")
    a.set_title(title)
    a.legend(fontsize=8)
    a.grid(axis="y", alpha=0.3)


def main(out: Path) -> None:
    rows = list(csv.reader((out / "summary.csv").open()))[1:]
    fio = [r for r in rows if r[0] == "fio"]
    swap = [r for r in rows if r[0] == "swap"]
    panels = (1 if fio else 0) + (1 if swap else 0)
    if panels == 0:
        sys.exit("summary.csv holds no result")
    fig, ax = plt.subplots(1, panels, figsize=(9 * panels if fio else 6, 5), squeeze=False)
    ax = ax[0]
    if fio:
        bars(ax[0], fio, [("kram / brd", 8), ("kram / zram", 11)],
             "4 KiB random I/O: KRAM IOPS as a ratio", 1.0)
        ax[0].set_xticks(range(len(fio)), [
            f"{r[1]}cpu m{r[2]}\n{r[3].replace('rand', '')} QD{r[4]}" for r in fio], fontsize=7)
        ax[0].set_ylabel("ratio (higher is better)")
    if swap:
        a = ax[-1]
        bars(a, swap, [("kram / baseline", 8)], "swap-bound program: KRAM runtime as a ratio", 1.0)
        a.axhline(0.2, color="black", linestyle=":", linewidth=1, label="goal vs disk 0.2")
        a.legend(fontsize=8)
        a.set_xticks(range(len(swap)), [f"{r[1]} vCPU\n{r[2]}, vs {r[3]}" for r in swap], fontsize=8)
        a.set_ylabel("ratio (lower is better)")
    finish(fig, out, "kram.png", "KRAM")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
