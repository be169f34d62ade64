#!/usr/bin/env python3
"""Draws mailbox.png from a scripts/bench/mailbox.sh result directory: the half round trip of
every mode per payload size (median over runs, min-max error bars), log scale."""
import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plotlib import finish  # noqa: E402


def main(out: Path) -> None:
    rows = list(csv.DictReader((out / "summary.csv").open()))
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    sizes = list(dict.fromkeys(r["payload"] for r in rows))
    fig, ax = plt.subplots(figsize=(11, 4.8))
    width = 0.8 / len(sizes)
    for j, size in enumerate(sizes):
        pts = {r["mode"]: r for r in rows if r["payload"] == size}
        xs = [i for i, m in enumerate(modes) if m in pts]
        med = [float(pts[modes[i]]["half_rtt_us"]) for i in xs]
        lo = [m - float(pts[modes[i]]["half_rtt_min_us"]) for m, i in zip(med, xs)]
        hi = [float(pts[modes[i]]["half_rtt_max_us"]) - m for m, i in zip(med, xs)]
        ax.bar([i + (j - (len(sizes) - 1) / 2) * width for i in xs], med, width,
               yerr=[lo, hi], capsize=2, label=f"{size} B")
    ax.set_xticks(range(len(modes)), modes, rotation=20, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("half round trip, µs (median, min-max)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    finish(fig, out, "mailbox.png", "mailbox half round trip")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
