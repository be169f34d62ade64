#!/usr/bin/env python3
"""Draws shmem.png from a scripts/bench/shmem.sh result directory: put and get latency and
bandwidth over the transfer size, one node against across nodes; atomics and barrier_all; and,
where the results have them, the OpenSHMEM 1.5 operations' time over the 1.4 way's."""
import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def human(size: int) -> str:
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= n and size % n == 0:
            return f"{size // n} {unit}"
    return f"{size} B"


def main(out: Path) -> None:
    rows = list(csv.DictReader((out / "summary.csv").open()))
    # A 1.5 operation and the 1.4 way of doing the same (Open MPI 4.1 has the latter only).
    v15 = {"put_signal": "put_set", "fetch_add_nbi": "fetch_add", "sum_reduce": "sum_to_all"}
    by_key = {(x["op"], x["size"]): x for x in rows}
    pairs = [(x, by_key.get((v15[x["op"]], x["size"]))) for x in rows if x["op"] in v15]
    pairs = [(x, b) for x, b in pairs if b]
    fig, ax = plt.subplots(1, 4 if pairs else 3, figsize=(21 if pairs else 16, 4.8))
    for op, style in (("put", "-o"), ("get", "-s")):
        r = [x for x in rows if x["op"] == op]
        sizes = [int(x["size"]) for x in r]
        for cfg, colour in (("one_node", "tab:blue"), ("cross_node", "tab:red"),
                            ("cross_service", "tab:orange"), ("openmpi_one_node", "tab:green")):
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
    if pairs:
        xs = range(len(pairs))
        cfgs = [(c, label) for c, label in (("one_node", "one node"), ("cross_node", "across nodes"))
                if any(x[f"{c}_us"] and b[f"{c}_us"] for x, b in pairs)]
        width = 0.8 / max(len(cfgs), 1)
        for j, (cfg, label) in enumerate(cfgs):
            ratios = [float(x[f"{cfg}_us"]) / float(b[f"{cfg}_us"])
                      if x[f"{cfg}_us"] and b[f"{cfg}_us"] and float(b[f"{cfg}_us"]) > 0
                      else float("nan") for x, b in pairs]
            ax[3].bar([i + (j - (len(cfgs) - 1) / 2) * width for i in xs], ratios, width,
                      label=label)
        ax[3].axhline(1.0, color="grey", linestyle="--", linewidth=1)
        ax[3].set_xticks(list(xs), [f"{x['op']}\n{human(int(x['size']))}" for x, _ in pairs],
                         fontsize=7)
        ax[3].set_ylabel("µs over put_set, fetch_add, sum_to_all")
        ax[3].set_title("OpenSHMEM 1.5 against the 1.4 way (< 1: saves time)")
        ax[3].legend(fontsize=8)
    env = dict(csv.reader((out / "environment.csv").open()))
    fig.suptitle(f"OpenSHMEM over GSAS: {env.get('accelerator', '?')}, "
                 f"{env.get('date', '')}, commit {env.get('commit', '?')}")
    fig.tight_layout()
    fig.savefig(out / "shmem.png", dpi=110)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
