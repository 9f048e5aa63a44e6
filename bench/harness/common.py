"""Shared helpers for the benchmarks: timing statistics, machine description, tables, plots."""

import os
import platform
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "results"


@dataclass
class Config:
    """Run-wide settings: `quick` shrinks every experiment to fit in a few minutes."""

    quick: bool = False
    repeats: int = 3
    seeds: int = 3
    notes: list = field(default_factory=list)


# ---------------------------------------------------------------- statistics


def median_range(values):
    """(median, min, max) of a sequence, NaN-safe (NaNs are ignored)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return (np.nan, np.nan, np.nan)
    return (float(np.median(v)), float(v.min()), float(v.max()))


def fmt(values, digits=3, scale=1.0, unit=""):
    """'median [min-max]' of `values` times `scale`, with `digits` significant digits.

    NaN entries (e.g. a target never reached) are left out of the statistics and
    counted: the text then ends with '(k of n)', k being the finite values.
    """
    v = np.asarray(values, dtype=np.float64)
    med, lo, hi = median_range(v)
    n_ok = int(np.isfinite(v).sum())
    if np.isnan(med):
        return "n/a"

    def g(x):
        return f"{x * scale:.{digits}g}"

    out = f"{g(med)}{unit} [{g(lo)}–{g(hi)}]"
    return out if n_ok == v.size else f"{out} ({n_ok} of {v.size})"


def timed(fn, *args, **kwargs):
    """Call fn(*args, **kwargs) and return (seconds, result) with perf_counter."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def accuracy(y_true, scores):
    """Accuracy of sign(scores) against ±1 labels (a zero score counts as -1)."""
    return float(np.mean(np.where(np.asarray(scores) > 0, 1.0, -1.0) == y_true))


# ---------------------------------------------------------------- machine


def _cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_commit():
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, cwd=Path(__file__).resolve().parent, check=False)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def machine_info():
    """A one-paragraph description of the machine and the versions, for every table."""
    import numpy
    import scipy
    import sklearn

    import pgs
    try:
        from importlib.metadata import version
        ll = version("liblinear-official")
    except Exception:  # noqa: BLE001 - any failure just means "not installed"
        ll = "not installed"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"CPU: {_cpu_model()} ({os.cpu_count()} logical cores), load average {load} "
            f"at the start (the machine is shared: timings are noisy; figures are medians "
            f"[min–max]). Python {platform.python_version()}, numpy {numpy.__version__}, "
            f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}, liblinear "
            f"{ll}, pgs {pgs.__version__} (git {_git_commit()}), "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.")


# ---------------------------------------------------------------- output


def markdown_table(header, rows):
    """A GitHub markdown table from a header list and row lists (cells str()-ed)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_report(name, title, sections, cfg, intro=""):
    """Write results/NAME.md (title, machine, intro, then (heading, table) sections), print it.

    With `cfg.quick` the file is NAME_quick.md so a quick run never overwrites a full one.
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if cfg.quick else ""
    parts = [f"# {title}{' (quick run)' if cfg.quick else ''}", "", machine_info(), ""]
    if intro:
        parts += [intro, ""]
    for heading, body in sections:
        if heading:
            parts += [f"## {heading}", ""]
        parts += [body, ""]
    text = "\n".join(parts)
    path = RESULTS / f"{name}{suffix}.md"
    path.write_text(text)
    print(text)
    return path


def figure_path(name, cfg):
    """results/NAME.png (NAME_quick.png for a quick run)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    return RESULTS / f"{name}{'_quick' if cfg.quick else ''}.png"


def pyplot():
    """matplotlib.pyplot with the Agg backend and a small default figure."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"figure.dpi": 80, "font.size": 9, "savefig.dpi": 80})
    return plt


def print_and_write(text, out):
    """Print a Markdown report and write it to `out` (a path; folders are made)."""
    print()
    print(text)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"written to {out}")
