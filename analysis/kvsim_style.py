"""One look for every kvsim figure: fonts and sizes, a colour per policy
name that stays the same across figures, log time axes, and captions read
from a study's study.json (experiment, seeds, git revision).

  import kvsim_style as ks
  ks.apply()                       # before the first figure
  ax.plot(x, y, color=ks.color("speculative"), label="speculative")
  ks.log_time_axis(ax, "x", "TTFT")  # log axis in ms, decade ticks labelled
  fig.text(0, 0, ks.caption(study, "e2_traces", seeds=5), ...)

Colours come from the Okabe-Ito palette (Okabe and Ito, "Color Universal
Design", 2008), which stays apart for the common colour-vision deficiencies;
policies the table does not name take the next unused colour of tab20 in
the order they are first asked for, so one process draws them alike."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

FIG_W, FIG_H = 7.0, 4.5  # inches: one column of a report page at 120 dpi
DPI = 120

RC = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "savefig.dpi": DPI,
    "savefig.bbox": "tight",
}

# Fixed colours per policy or preset name (Okabe-Ito; black is the baseline).
POLICY_COLORS = {
    "none": "#000000",
    "speculative": "#D55E00",
    "early_rdma": "#0072B2",
    "reactive_hotspot": "#009E73",
    "full": "#CC79A7",
    "vllm": "#56B4E9",
    "sglang": "#E69F00",
    "dynamo": "#F0E442",
    "llm-d": "#999999",
    "mooncake": "#882255",
    "btb": "#332288",
}
_extra = {}


def apply():
    """Sets the kvsim rc parameters for the figures drawn after it."""
    plt.rcParams.update(RC)


def color(name):
    """The colour of a policy (or any label): fixed for the names above,
    else the next tab20 colour, the same for the name for the process."""
    name = str(name)
    if name in POLICY_COLORS:
        return POLICY_COLORS[name]
    if name not in _extra:
        cmap = plt.get_cmap("tab20")
        _extra[name] = cmap(len(_extra) % cmap.N)
    return _extra[name]


def figure(ncols=1, nrows=1, **kw):
    """A figure of the house size (widened per column)."""
    kw.setdefault("figsize", (FIG_W * (1 if ncols == 1 else 0.6 * ncols), FIG_H * (1 if nrows == 1 else 0.7 * nrows)))
    return plt.subplots(nrows, ncols, **kw)


def log_time_axis(ax, which="x", what="time", unit="ms"):
    """A log axis of a duration with its unit in the label and plain
    numbers at the decades (1, 10, 100 ms rather than 10^0)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(ticker.NullFormatter())
    (ax.set_xlabel if which == "x" else ax.set_ylabel)(f"{what} ({unit}, log scale)")


def caption(study, exp, seeds=None, extra=""):
    """Caption text: experiment, seeds, revision and study size, from the
    study.json dict (missing fields print as '?')."""
    study = study or {}
    s = f"{exp}; seeds: {seeds if seeds is not None else '?'}; "
    s += f"revision {study.get('revision', '?')}; study size {study.get('size', '?')}"
    return s + (f"; {extra}" if extra else "")


def add_caption(fig, text):
    """Puts the caption under everything drawn so far (rotated tick labels
    included), in small grey type."""
    fig.canvas.draw()
    box = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
    y = box.y0 / fig.get_figheight() - 0.015
    fig.text(0.01, y, text, fontsize=7, color="#444444", ha="left", va="top", wrap=True)


def save(fig, path):
    fig.savefig(path)
    plt.close(fig)
    return path
