"""What the benchmark plots share (plot_gsas.py, plot_dht.py): reading a CSV of a run, and a
throughput panel with one line per node count over threads per node."""
import csv
import os
import sys


def rows(d, name):
    with open(os.path.join(d, name), newline="") as f:
        return list(csv.DictReader(f))


def by_nodes(a, pts, ylabel="ops/s (all nodes)"):
    """Median ops/s with min/max error bars over threads per node, a line per node count."""
    for nn in sorted({int(x["nodes"]) for x in pts}):
        xs = sorted((x for x in pts if int(x["nodes"]) == nn),
                    key=lambda x: int(x["threads_per_node"]))
        a.errorbar([int(x["threads_per_node"]) for x in xs],
                   [float(x["ops_per_s"]) for x in xs],
                   yerr=[[float(x["ops_per_s"]) - float(x["min_ops_per_s"]) for x in xs],
                         [float(x["max_ops_per_s"]) - float(x["ops_per_s"]) for x in xs]],
                   fmt="-o", capsize=3, label=f"{nn} node{'s' if nn > 1 else ''}")
    a.set_xlabel("threads per node")
    a.set_xticks(sorted({int(x["threads_per_node"]) for x in pts}))
    a.set_ylabel(ylabel)
    a.set_ylim(bottom=0)
    a.legend(fontsize=8)
    a.grid(alpha=0.3)


def save(fig, d, name):
    """Writes the figure as NAME in the run directory D."""
    fig.tight_layout()
    out = os.path.join(d, name)
    fig.savefig(out, dpi=100)
    print(f"plot: {out}")


def run(main, doc):
    """The scripts' command line: one argument, the run directory."""
    if len(sys.argv) != 2:
        sys.exit(doc)
    main(sys.argv[1])


def environment(d):
    """The run's environment.csv as a dict (accelerator, commit, date, ...)."""
    with open(os.path.join(d, "environment.csv"), newline="") as f:
        return dict(csv.reader(f))


def finish(fig, d, name, what):
    """Titles the figure with WHAT and the run's environment, then saves it as NAME in D."""
    env = environment(d)
    fig.suptitle(f"{what}: {env.get('accelerator', '?')}, vCPUs {env.get('vcpus_per_node', '?')}, "
                 f"{env.get('date', '')}, commit {env.get('commit', '?')}", fontsize=10)
    save(fig, d, name)
