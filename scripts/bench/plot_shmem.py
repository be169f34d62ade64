#!/usr/bin/env python3
"""Draws shmem.png from a scripts/bench/shmem.sh result directory: put and get latency and
bandwidth over the transfer size, one node against across nodes; atomics and barrier_all."""
import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(out: Path) -> None:
    rows = list(csv.DictReader((out / "summary.csv").open()))
    fig, ax = plt.subplots(1, 3, figsize=(16, 4.8))
    for op, style in (("put", "-o"), ("get", "-s")):
        r = [x for x in rows if x["op"] == op]
        sizes = [int(x["size"]) for x in r]
        for cfg, colour in (("one_node", "tab:blue"), ("cross_node", "tab:red"),
                            ("openmpi_one_node", "tab:green")):
            if not all(x[f"{cfg}_us"] for x in r):
                continue
            ax[0].plot(sizes, [float(x[f"{cfg}_us"]) for x in r], style, color=colour,
                       label=f"{op}, {cfg.replace('_', ' ')}")
            ax[1].plot(sizes, [float(x[f"{cfg}_mb_per_s"]) for x in r], style, color=colour,
                       label=f"{op}, {cfg.replace('_', ' ')}")
    for a, title, unit in ((ax[0], "latency (median)", "µs"), (ax[1], "bandwidth", "MB/s")):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("bytes per transfer")
        a.set_ylabel(unit)
        a.set_title(title)
        a.legend(fontsize=8)
    small = [x for x in rows if x["op"] in ("fetch_add", "compare_swap", "add", "barrier_all")]
    xs = range(len(small))
    bars = [("one_node", "one node"), ("cross_node", "across nodes"),
            ("openmpi_one_node", "Open MPI, one node")]
    bars = [b for b in bars if all(x[f"{b[0]}_us"] for x in small)]
    width = 0.8 / len(bars)
    for j, (cfg, label) in enumerate(bars):
        ax[2].bar([i + (j - (len(bars) - 1) / 2) * width for i in xs],
                  [float(x[f"{cfg}_us"]) for x in small], width, label=label)
    ax[2].set_yscale("log")
    ax[2].set_xticks(list(xs), [x["op"] for x in small])
    ax[2].set_ylabel("µs (median)")
    ax[2].set_title("atomics (2 PEs) and barrier_all")
    ax[2].legend(fontsize=8)
    env = dict(csv.reader((out / "environment.csv").open()))
    fig.suptitle(f"OpenSHMEM over GSAS: {env.get('accelerator', '?')}, "
                 f"{env.get('date', '')}, commit {env.get('commit', '?')}")
    fig.tight_layout()
    fig.savefig(out / "shmem.png", dpi=110)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
