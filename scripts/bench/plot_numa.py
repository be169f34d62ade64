#!/usr/bin/env python3
"""Draws numa.png from a scripts/bench/numa.sh result directory: remote/local ratio of each
bandwidth and latency metric (median, min-max over runs), and the 1.5x-RAM program's runtime
spilling into the remote NUMA node against swapping to KRAM."""
import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plotlib import finish  # noqa: E402


def main(out: Path) -> None:
    rows = list(csv.reader((out / "summary.csv").open()))[1:]
    ratios = [r for r in rows if r[3]]
    spill = [r for r in rows if r[8]]
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    if ratios:
        med = [float(r[3]) for r in ratios]
        ax[0].bar([r[0] for r in ratios], med, capsize=3,
                  yerr=[[m - float(r[4]) for m, r in zip(med, ratios)],
                        [float(r[5]) - m for m, r in zip(med, ratios)]])
        ax[0].axhline(1.0, color="black", linewidth=1, linestyle="--")
        ax[0].set_ylabel("remote / local (median, min-max)")
        ax[0].set_title("bound to the remote NUMA node vs the local node")
        ax[0].tick_params(axis="x", labelsize=8, rotation=15)
    for r in spill:
        ax[1].bar(["spill to NUMA node", "KRAM swap"], [float(r[8]), float(r[9])],
                  color=["tab:green", "tab:blue"])
        ax[1].set_title(f"{r[0].removeprefix('seconds ')} program, 96 MiB node", fontsize=9)
        ax[1].set_ylabel("seconds (median)")
    finish(fig, out, "numa.png", "NUMA")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
