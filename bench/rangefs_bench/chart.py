"""docs/benchmarks.png: each system relative to each row's baseline, drawn with matplotlib."""
from .config import SYSTEMS
from .process import log


def write_chart(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is missing: no chart")
        return
    colors = {"rangefs": "#1f77b4", "rclone": "#ff7f0e", "httpdirfs": "#2ca02c"}
    # Counts whose baseline is 0 (stalls) have no ratio to draw; the table shows them.
    rows = [r for r in rows if r.unit != "reads"]
    absolute_kinds = ("target", "exact ranges")
    relative = [r for r in rows if r.baseline_label not in absolute_kinds]
    absolute = [r for r in rows if r.baseline_label in absolute_kinds]

    def score(row, key):
        v, b = row.values.get(key), row.values.get("baseline")
        if not isinstance(v, (int, float)) or not isinstance(b, (int, float)) or v <= 0 or b <= 0:
            return None
        return v / b if row.better == "higher" else b / v

    height = 0.45 * len(relative) * 1.0 + 2
    fig = plt.figure(figsize=(15, height + 0.3 * len(absolute) * 3 + 2))
    grid = fig.add_gridspec(2, 1, height_ratios=[height, 0.9 * len(absolute) + 1.5], hspace=0.12)
    ax = fig.add_subplot(grid[0])
    bar = 0.26
    ys = list(range(len(relative)))
    scores = [score(r, k) for r in relative for k in SYSTEMS]
    scores = [v for v in scores if v]
    lo = min(scores + [0.5]) / 3
    hi = max(scores + [2.0]) * 4
    for i, key in enumerate(SYSTEMS):
        vals = [score(r, key) for r in relative]
        pos = [y + (i - 1) * bar for y in ys]
        ax.barh([p for p, v in zip(pos, vals) if v], [v for v in vals if v], height=bar, color=colors[key],
                label=key)
        for p, v, r in zip(pos, vals, relative):
            if v is None:
                ax.text(lo * 1.1, p, "n/a", va="center", fontsize=7, color="#888")
            else:
                ax.text(v * 1.08, p, f"{v:.2g}×", va="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(ys)
    ax.set_yticklabels([f"{r.label.strip()}\n(vs {r.baseline_label})" for r in relative], fontsize=7.5)
    ax.invert_yaxis()
    ax.set_xlabel("relative to the row's baseline (log scale; >1 = better than the baseline, "
                  "speeds: value ÷ baseline, times and bytes: baseline ÷ value)")
    ax.legend(loc="lower right")
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.set_title("RangeFS benchmarks: each system relative to the link (curl) or local-disk baseline")
    if absolute:
        ax2 = fig.add_subplot(grid[1])
        ys = list(range(len(absolute)))
        numbers = [v for r in absolute for k, v in r.values.items()
                   if k != "baseline" and isinstance(v, (int, float)) and v > 0]
        lo2, hi2 = min(numbers + [1.0]) / 3, max(numbers + [64.0]) * 8
        ax2.set_xscale("log")
        ax2.set_xlim(lo2, hi2)
        for i, key in enumerate(SYSTEMS):
            vals = [r.values.get(key) for r in absolute]
            pos = [y + (i - 1) * bar for y in ys]
            good = [(p, v) for p, v in zip(pos, vals) if isinstance(v, (int, float)) and v > 0]
            ax2.barh([p for p, _ in good], [v for _, v in good], height=bar, color=colors[key])
            for p, v in zip(pos, vals):
                number = isinstance(v, (int, float)) and v > 0
                ax2.text((v if number else lo2) * 1.08, p, f"{v:.3g}" if number else "n/a", va="center",
                         fontsize=7, color="black" if number else "#888")
        for y, r in zip(ys, absolute):
            if r.target and r.target[0] == "abs<=":
                ax2.plot([r.target[1]] * 2, [y - 0.45, y + 0.45], color="red", linewidth=2)
            if r.baseline_label == "exact ranges":
                ax2.plot([1, 1], [y - 0.45, y + 0.45], color="black", linewidth=1, linestyle="--")
        ax2.set_yticks(ys)
        ax2.set_yticklabels([f"{r.label.strip()} ({r.unit})" for r in absolute], fontsize=7.5)
        ax2.invert_yaxis()
        ax2.set_xlabel("absolute value (log scale, lower is better); red line = the issue's target, "
                       "dashed = exact ranges (1×)")
        ax2.grid(axis="x", which="both", alpha=0.3)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
