#!/usr/bin/env python3
"""Plot the CSVs of one scripts/bench/gsas.sh run: gsas.png in the same directory.

usage: plot_gsas.py DIR   (DIR holds latency.csv, faa_throughput.csv, bulk_read.csv,
read_throughput.csv and environment.csv). Needs matplotlib (gsas.sh installs it in a venv).
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from plotlib import by_nodes, rows, run, save  # noqa: E402


def main(d):
    env = {r["key"]: r["value"] for r in rows(d, "environment.csv")}
    lat = [r for r in rows(d, "latency.csv") if r["op"] == "faa"]
    tput = rows(d, "faa_throughput.csv")
    bw = rows(d, "bulk_read.csv")
    n = int(env["nodes"])

    fig, ax = plt.subplots(2, 3, figsize=(19, 10))
    fig.suptitle(
        f"unimem GSAS, {n} nodes ({env['accelerator']}, {env['vcpus_per_node']} vCPU each, "
        f"{env['host_cores']} host cores), kernel {env['kernel']}, {env['commit']}, {env['date']}"
    )

    # Fetch&Add latency matrix with the ratio to the polled mailbox round trip.
    m = [[0.0] * n for _ in range(n)]
    r = [[0.0] * n for _ in range(n)]
    for x in lat:
        i, h = int(x["issuer"]), int(x["home"])
        m[i][h] = float(x["median_us"])
        r[i][h] = float(x["ratio_to_mbox"])
    a = ax[0][0]
    im = a.imshow(m, cmap="viridis")
    for i in range(n):
        for h in range(n):
            a.text(h, i, f"{m[i][h]:.1f} us\nx{r[i][h]:.2f} mbox", ha="center", va="center",
                   color="white", fontsize=9)
    a.set_xticks(range(n))
    a.set_yticks(range(n))
    a.set_xlabel("home node")
    a.set_ylabel("issuer node")
    a.set_title("Fetch&Add latency (median) and ratio to the polled mailbox round trip", fontsize=10)
    fig.colorbar(im, ax=a, label="us")

    # Throughput over threads per node, one line per node count.
    for a, mode, title in ((ax[0][1], "single", "one variable (seed Fig. 11)"),
                           (ax[0][2], "many", "many variables picked at random (seed Fig. 12)")):
        pts = [x for x in tput if x["mode"] == mode]
        by_nodes(a, pts)
        if pts:
            where = f"on node {pts[0]['home']}" if mode == "single" else f"{pts[0]['variables']} variables"
            a.set_title(f"Fetch&Add throughput, {title}\n{where}; median and min/max of the windows",
                        fontsize=10)

    # Bulk-read bandwidth over transfer size.
    a = ax[1][0]
    for issuer in sorted({x["issuer"] for x in bw}):
        xs = sorted((x for x in bw if x["issuer"] == issuer), key=lambda x: int(x["len"]))
        home = xs[0]["home"]
        a.plot([int(x["len"]) for x in xs], [float(x["mb_per_s"]) for x in xs], "-o",
               label=f"node {issuer} -> node {home}" + (" (local)" if issuer == home else ""))
    a.set_xscale("log", base=2)
    a.set_xlabel("bytes per bulk read")
    a.set_ylabel("MB/s")
    a.set_title("Bulk-read bandwidth, one thread")
    a.legend()
    a.grid(alpha=0.3)

    # NOP / Fetch&Add / mailbox per pair, as bars.
    a = ax[1][1]
    best = {}
    for x in rows(d, "latency_reps.csv"):
        k = (int(x["issuer"]), int(x["home"]))
        best[k] = min(best.get(k, float("inf")), float(x["mbox_rtt_min_us"]))
    nop = {(int(x["issuer"]), int(x["home"])): float(x["median_us"])
           for x in rows(d, "latency.csv") if x["op"] == "nop"}
    mbox = {(int(x["issuer"]), int(x["home"])): float(x["mbox_rtt_median_us"]) for x in lat}
    pairs = sorted(mbox)
    xs = range(len(pairs))
    w = 0.21
    a.bar([x - 1.5 * w for x in xs], [mbox[p] for p in pairs], w, label="polled mailbox round trip, median")
    a.bar([x - 0.5 * w for x in xs], [best[p] for p in pairs], w, label="polled mailbox round trip, fastest")
    a.bar([x + 0.5 * w for x in xs], [nop[p] for p in pairs], w, label="GSAS NOP")
    a.bar([x + 1.5 * w for x in xs], [m[p[0]][p[1]] for p in pairs], w, label="GSAS Fetch&Add")
    a.set_yscale("log")
    a.set_xticks(list(xs))
    a.set_xticklabels([f"{i}>{h}" for i, h in pairs], fontsize=8)
    a.set_xlabel("issuer > home")
    a.set_ylabel("us (median)")
    a.set_title("Round trips per node pair")
    a.legend(fontsize=8)
    a.grid(alpha=0.3, axis="y")

    # READ256 and page-size bulk-read throughput.
    a = ax[1][2]
    rd = rows(d, "read_throughput.csv")
    labels = [f"{x['op']} {x.get('path', '')}\n{x['issuer']}>{x['home']}, {x['threads']} thr"
              for x in rd]
    a.bar(range(len(rd)), [float(x["ops_per_s"]) for x in rd])
    for k, x in enumerate(rd):
        a.text(k, float(x["ops_per_s"]), f"{float(x['mb_per_s']):.2f} MB/s", ha="center",
               va="bottom", fontsize=7)
    a.set_xticks(range(len(rd)))
    a.set_xticklabels(labels, fontsize=7)
    a.set_ylabel("ops/s")
    a.set_title("READ256 (service, mapped) and 4 KiB bulk-read throughput", fontsize=10)
    a.tick_params(axis="x", labelrotation=90)
    a.grid(alpha=0.3, axis="y")

    save(fig, d, "gsas.png")


if __name__ == "__main__":
    run(main, __doc__)
