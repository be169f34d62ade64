#!/usr/bin/env python3
"""Draws modules_ab.png from a scripts/bench/modules_ab.sh result directory: per workload the
ratio new/old (median over the rounds, min-max error bars), with the 5% band around 1."""
import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plotlib import environment, finish  # noqa: E402


def main(out: Path) -> None:
    rows = list(csv.DictReader((out / "summary.csv").open()))
    names = [r["workload"] for r in rows]
    med = [float(r["ratio_median"]) for r in rows]
    lo = [m - float(r["ratio_min"]) for m, r in zip(med, rows)]
    hi = [float(r["ratio_max"]) - m for m, r in zip(med, rows)]
    fig, ax = plt.subplots(figsize=(11, 4.8))
    ax.axhspan(0.95, 1.05, color="tab:green", alpha=0.15, label="within 5%")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.bar(range(len(names)), med, 0.6, yerr=[lo, hi], capsize=3,
           color=["tab:red" if m > 1.05 else "tab:blue" for m in med])
    ax.set_xticks(range(len(names)), names, rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("new / old time per operation (median, min-max)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ref = environment(out).get("ref", "?")
    finish(fig, out, "modules_ab.png", f"modules A/B against {ref}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
