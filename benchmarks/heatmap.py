"""One ratio heatmap PNG, the way every sweep in benchmarks/ draws it: a cell per point, its ratio written in it,
coloured by thresholds (red below the first), and a word where a point has no ratio (skipped, failed).

    heatmap(grid, x_labels, y_labels, title, path, bounds=[0.8, 0.9, 1.0], missing="skip", x_name="N", y_name="M")
    heatmap(grid, ..., bounds=(0.9, 1.0), colours=ORANGE_BAND)    # red < 0.9, orange < 1.0, green above
"""

from __future__ import annotations

from pathlib import Path

COLOURS = ["#d73027", "#fc8d59", "#fee08b", "#91cf60", "#1a9850"]
ORANGE_BAND = [COLOURS[0], COLOURS[1], COLOURS[-1]]  # with two bounds: red below the first, orange below the second


def heatmap(grid, x_labels, y_labels, title: str, path: Path, bounds=(0.9, 1.0), missing: str = "skip",
            x_name: str = "", y_name: str = "", size=None, colours=None) -> Path:
    """grid[i][j] is the ratio of row y_labels[i], column x_labels[j] (None: no ratio, written `missing`; a string:
    no ratio, written as it is). `bounds` split the colours: below bounds[0] is red, above bounds[-1] green, the
    ones between in steps; `colours` (len(bounds) + 1 of them) replaces that choice."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import BoundaryNorm, ListedColormap

    if colours is None:
        colours = [COLOURS[0], *COLOURS[-len(bounds):]] if len(bounds) < len(COLOURS) else COLOURS
    cmap, norm = ListedColormap(colours), BoundaryNorm([0.0, *bounds, 1e9], len(colours))
    fig, ax = plt.subplots(figsize=size or (1.6 * len(x_labels) + 2, 0.7 * len(y_labels) + 1.5))
    ax.imshow([[float("nan") if v is None or isinstance(v, str) else v for v in row] for row in grid], cmap=cmap,
              norm=norm, aspect="auto")
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            text = missing if v is None else v if isinstance(v, str) else f"{v:.2f}"
            ax.text(j, i, text, ha="center", va="center", fontsize=9)
    ax.set_xticks(range(len(x_labels)), [str(x) for x in x_labels])
    ax.set_yticks(range(len(y_labels)), [str(y) for y in y_labels])
    ax.set_xlabel(x_name)
    ax.set_ylabel(y_name)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    from PIL import Image  # a 256-colour palette: a third of the bytes, and the repo travels to the device

    Image.open(path).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return Path(path)
