#!/usr/bin/env python3
"""Draws fam.png from a scripts/bench/fam.sh result directory (its summary.csv): the 256 B
latency of fam_get / fam_put against the raw GSAS bulk transfer (with the ratios, goal <= 1.3),
fam_map loads and stores against local memory, throughput over the transfer size for 1, 2 and
4 memory servers (even and random placement, interleaved and not; the seed's Figures 3, 4 and
7) and at the largest size over the servers.

usage: plot_fam.py DIR   (DIR holds summary.csv and environment.csv). Needs matplotlib
(fam.sh installs it in a venv)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plotlib import finish, rows, run  # noqa: E402

SERVER_COLOURS = {1: "tab:blue", 2: "tab:orange", 4: "tab:green"}


def num(x):
    """A measured value as a float, None for n/a or empty."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def latency(a, pts):
    """Bars of the median 256 B latency per operation, a group per client node, with the
    fam/GSAS ratios written over the fam bars."""
    ops = ["fam_get", "gsas_read", "fam_put", "gsas_write", "gsas_nop"]
    clients = sorted({int(x["client_node"]) for x in pts})
    width = 0.8 / max(len(clients), 1)
    for j, c in enumerate(clients):
        by_op = {x["op"]: x for x in pts if int(x["client_node"]) == c}
        xs = [i + (j - (len(clients) - 1) / 2) * width for i in range(len(ops))]
        ys = [num(by_op[o]["median_us"]) if o in by_op else None for o in ops]
        a.bar([x for x, y in zip(xs, ys) if y is not None], [y for y in ys if y is not None],
              width, label=f"from node {c}" + (" (item local)" if c == 1 else " (item remote)"))
        for o, x, y in zip(ops, xs, ys):
            r = num(by_op[o]["ratio"]) if o in by_op else None
            if y is not None and r is not None:
                a.annotate(f"{r:.2f}x", (x, y), ha="center", va="bottom", fontsize=7)
    a.set_xticks(range(len(ops)), ["get", "GSAS read", "put", "GSAS write", "GSAS nop"],
                 fontsize=8)
    a.set_ylabel("µs (median)")
    a.set_title("256 B latency (fam/GSAS ratio; goal <= 1.3)", fontsize=9)
    a.legend(fontsize=7)


def mapping(a, pts):
    """MB/s of memcpy loads and stores over the copy size, through fam_map and local."""
    styles = {"map_load": "-o", "map_store": "-s", "local_load": "--o", "local_store": "--s"}
    shown = False
    for c in sorted({int(x["client_node"]) for x in pts}):
        for op, style in styles.items():
            r = sorted((x for x in pts if x["op"] == op and int(x["client_node"]) == c
                        and num(x["mb_per_s"]) is not None), key=lambda x: int(x["size"]))
            if not r:
                continue
            shown = True
            a.plot([int(x["size"]) for x in r], [num(x["mb_per_s"]) for x in r], style,
                   label=f"{op.replace('_', ' ')}, node {c}")
    if not shown:
        a.text(0.5, 0.5, "no fam_map measurement", ha="center", transform=a.transAxes)
    else:
        a.set_xscale("log", base=2)
        a.legend(fontsize=6)
    a.set_ylim(bottom=0)
    a.set_xlabel("bytes per copy")
    a.set_ylabel("MB/s (median)")
    a.set_title("fam_map load/store vs local memory (n/a: not plotted)", fontsize=9)


def by_size(a, pts, op, place, threads):
    """Throughput over the transfer size: a colour per server count, solid interleaved,
    dashed whole items, min-max over the runs as error bars."""
    for s in sorted({int(x["servers"]) for x in pts}):
        for il, style in (("1", "-o"), ("0", "--s")):
            r = sorted((x for x in pts if x["op"] == op and x["placement"] == place
                        and int(x["threads"]) == threads and int(x["servers"]) == s
                        and x["interleave"] == il and num(x["mb_per_s"]) is not None),
                       key=lambda x: int(x["size"]))
            if not r:
                continue
            m = [num(x["mb_per_s"]) for x in r]
            a.errorbar([int(x["size"]) for x in r], m, fmt=style, capsize=2, markersize=4,
                       color=SERVER_COLOURS.get(s),
                       yerr=[[v - num(x["min_mb_per_s"]) for v, x in zip(m, r)],
                             [num(x["max_mb_per_s"]) - v for v, x in zip(m, r)]],
                       label=f"{s} server{'s' if s > 1 else ''}, "
                             f"{'interleaved' if il == '1' else 'whole'}")
    a.set_xscale("log", base=2)
    a.set_xlabel("bytes per transfer")
    a.set_ylabel("MB/s (all threads)")
    a.set_ylim(bottom=0)
    a.set_title(f"{op}, {place} placement, {threads} thread"
                f"{'s' if threads > 1 else ''}", fontsize=9)
    a.legend(fontsize=6)
    a.grid(alpha=0.3)


def by_servers(a, pts, op):
    """Throughput at the largest transfer over the server count, a line per thread count,
    placement and interleaving."""
    if not pts:
        return
    size = max(int(x["size"]) for x in pts)
    for th in sorted({int(x["threads"]) for x in pts}):
        for place in ("even", "random"):
            for il, style in (("1", "-o"), ("0", "--s")):
                r = sorted((x for x in pts if x["op"] == op and int(x["size"]) == size
                            and x["placement"] == place and x["interleave"] == il
                            and int(x["threads"]) == th and num(x["mb_per_s"]) is not None),
                           key=lambda x: int(x["servers"]))
                if r:
                    a.plot([int(x["servers"]) for x in r], [num(x["mb_per_s"]) for x in r],
                           style, markersize=4,
                           label=f"{th} thr, {place}, {'interl.' if il == '1' else 'whole'}")
    a.set_xticks(sorted({int(x["servers"]) for x in pts}))
    a.set_xlabel("memory servers")
    a.set_ylabel("MB/s (all threads)")
    a.set_ylim(bottom=0)
    a.set_title(f"{op}, {size >> 20} MiB transfers", fontsize=9)
    a.legend(fontsize=6)
    a.grid(alpha=0.3)


def main(d):
    s = rows(d, "summary.csv")
    lat = [x for x in s if x["part"] == "lat"]
    mp = [x for x in s if x["part"] == "map"]
    tp = [x for x in s if x["part"] == "tput"]
    threads = max((int(x["threads"]) for x in tp), default=1)
    fig, ax = plt.subplots(2, 4, figsize=(22, 9))
    latency(ax[0][0], lat)
    mapping(ax[0][1], mp)
    by_servers(ax[0][2], tp, "fam_get")
    by_servers(ax[0][3], tp, "fam_put")
    for i, (op, place) in enumerate((("fam_get", "even"), ("fam_get", "random"),
                                     ("fam_put", "even"), ("fam_put", "random"))):
        by_size(ax[1][i], tp, op, place, threads)
    finish(fig, d, "fam.png", "OpenFAM over GSAS")


if __name__ == "__main__":
    run(main, __doc__)
