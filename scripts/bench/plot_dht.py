#!/usr/bin/env python3
"""Plot the CSVs of one scripts/bench/dht.sh run: dht.png in the same directory.

usage: plot_dht.py DIR   (DIR holds dht_throughput.csv and environment.csv). Needs matplotlib
(dht.sh installs it in a venv).
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from plotlib import by_nodes, rows, run, save  # noqa: E402

TITLES = {
    "read256": "raw READ256 (random blocks on all nodes)",
    "get": "dhtGet, prefilled table (seed Fig. 15)",
    "put": "dhtPut from empty (Fig. 16)",
    "mix80": "80% put / 20% get (Fig. 17)",
    "mix50": "50% put / 50% get (Fig. 18)",
}


def main(d):
    env = {r["key"]: r["value"] for r in rows(d, "environment.csv")}
    tput = rows(d, "dht_throughput.csv")
    fig, ax = plt.subplots(2, 3, figsize=(19, 10))
    fig.suptitle(
        f"unimem DHT on GSAS, {env['nodes']} nodes ({env['accelerator']}, {env['vcpus_per_node']} "
        f"vCPU each, {env['host_cores']} host cores), {env['commit']}, {env['date']}; "
        f"median of {env['runs']} run(s)"
    )
    panels = ["get", "put", "mix80", "mix50", "read256"]
    for a, w in zip([ax[0][0], ax[0][1], ax[0][2], ax[1][0], ax[1][1]], panels):
        by_nodes(a, [x for x in tput if x["workload"] == w], "ops/s (all issuing nodes)")
        a.set_title(f"{TITLES[w]}; min/max over runs", fontsize=10)
    a = ax[1][2]
    gets = [x for x in tput if x["workload"] == "get"]
    for nn in sorted({int(x["nodes"]) for x in gets}):
        xs = sorted((x for x in gets if int(x["nodes"]) == nn), key=lambda x: int(x["threads_per_node"]))
        a.plot([int(x["threads_per_node"]) for x in xs], [float(x["ratio_to_read256"]) for x in xs],
               "-o", label=f"{nn} node{'s' if nn > 1 else ''}")
    a.axhline(0.8, color="red", linestyle="--", label="goal 0.8")
    a.set_title("dhtGet / raw READ256 of the same point", fontsize=10)
    a.set_xlabel("threads per node")
    a.set_xticks(sorted({int(x["threads_per_node"]) for x in gets}))
    a.set_ylabel("ratio")
    a.set_ylim(bottom=0)
    a.legend(fontsize=8)
    a.grid(alpha=0.3)
    save(fig, d, "dht.png")


if __name__ == "__main__":
    run(main, __doc__)
