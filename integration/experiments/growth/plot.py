#!/usr/bin/env python3
"""Plot the growth curve that `go run ./integration/experiments/growth`
wrote to results.json: median time of each phase against the number of CAs,
log-log, ibsm on the embedded fabric and on ibsim next to OpenSM on ibsim.

    python3 plot.py RESULTS.json OUT.png

Needs matplotlib (Debian: apt-get install python3-matplotlib)."""

import json
import statistics
import sys
from collections import defaultdict


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: plot.py RESULTS.json OUT.png")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot.py needs matplotlib: apt-get install python3-matplotlib")
    with open(argv[1]) as f:
        runs = json.load(f)
    cas = {}  # radix -> CAs (OpenSM rows do not carry it)
    for r in runs:
        if r["cas"]:
            cas[r["radix"]] = r["cas"]
    groups = defaultdict(list)
    for r in runs:
        groups[(r["sm"], r["fabric"], r["radix"])].append(r)
    series = [
        ("ibsm", "embedded", "SubnetUp", "ibsm embedded: SUBNET UP", "o-"),
        ("ibsm", "embedded", "Discovery", "ibsm embedded: discovery", "s--"),
        ("ibsm", "embedded", "Routing", "ibsm embedded: routing", "^--"),
        ("ibsm", "embedded", "Distribution", "ibsm embedded: distribution", "v--"),
        ("ibsm", "ibsim", "SubnetUp", "ibsm on ibsim: SUBNET UP", "D-"),
        ("opensm", "ibsim", "SubnetUp", "OpenSM on ibsim: SUBNET UP", "x-"),
        ("opensm", "ibsim", "Routing", "OpenSM on ibsim: routing", "+--"),
    ]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for sm, fabric, field, label, style in series:
        pts = []
        for (s, fab, radix), rs in groups.items():
            if s == sm and fab == fabric and radix in cas:
                y = statistics.median(r[field] for r in rs)
                if y > 0:
                    pts.append((cas[radix], y))
        if not pts:
            continue
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("CAs (full 3-level fat trees ft3-24 .. ft3-56)")
    ax.set_ylabel("seconds (median)")
    ax.set_title("Bring-up phases against fabric size")
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)


if __name__ == "__main__":
    main(sys.argv)
