#!/usr/bin/env python3
"""Draws tiering.png from a scripts/bench/tiering.sh result directory: the hot/cold workload's
runtime per configuration (median, min-max), each labelled with its ratio to tiering's."""
import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plotlib import environment, finish  # noqa: E402


def main(out: Path) -> None:
    rows = list(csv.DictReader((out / "summary.csv").open()))
    med = [float(r["seconds"]) for r in rows]
    lo = [m - float(r["seconds_min"]) for m, r in zip(med, rows)]
    hi = [float(r["seconds_max"]) - m for m, r in zip(med, rows)]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.bar([r["config"] for r in rows], med, yerr=[lo, hi], capsize=4,
           color=["tab:green", "tab:blue", "tab:orange", "tab:gray"][:len(rows)])
    for i, r in enumerate(rows):
        ax.annotate(f"{float(r['over_tiering']):.2f}x", (i, float(r["seconds_max"])), ha="center",
                    xytext=(0, 4), textcoords="offset points")
    ax.set_ylabel("seconds (median, min-max); label: x tiering")
    ax.grid(axis="y", alpha=0.3)
    env = environment(out)
    finish(fig, out, "tiering.png", f"hot/cold workload {env.get('workload_mib', '?')} MiB on 96 MiB")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
