"""The `pgs` command line: train, predict, eval, info and demo on svmlight files.

Every command prints a short report on stdout. Errors (a missing file, a
malformed line, a bad option) print one line on stderr and exit with status 2;
Ctrl-C exits with status 130 after saying where it stopped.
"""

import argparse
import math
import os
import sys
import time

import numpy as np

_EPILOG = "Start with 'pgs demo': it trains on a built-in generated data set."


class _UsageError(Exception):
    """A bad option: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def _positive_float(text):
    v = float(text)
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return v


def _positive_int(text):
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return v


def _radius(text):
    if text == "auto":
        return "auto"
    return _positive_float(text)


def _build_parser():
    from pgs._loss_table import LOSS_NAMES, LOSSES, loss_names

    top = _Parser(prog="pgs", description="Train lp-regularised linear models with the "
                  "Primal Gradient Solver on svmlight / libsvm files.", epilog=_EPILOG)
    top.add_argument("--version", action="store_true", help="print the version and exit")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    tr = sub.add_parser("train", help="train a model on an svmlight file and save it",
                        description="Train on DATA, report accuracy (or RMSE) and the "
                        "objective, and save the model.")
    tr.add_argument("data", metavar="DATA", help="training data (svmlight; .gz/.bz2/.xz ok)")
    tr.add_argument("--test", metavar="TEST", help="test data, reported after training")
    tr.add_argument("--loss", default="hinge", choices=LOSS_NAMES,
                    help=f"classification: {', '.join(loss_names('classification'))}; "
                    f"regression: {', '.join(loss_names('regression'))}")
    tr.add_argument("--p", type=float, default=2.0, help="norm of the regulariser, in (1, 2]")
    tr.add_argument("--sigma", type=_positive_float, default=1e-4,
                    help="regularisation strength (default 1e-4)")
    tr.add_argument("--T", type=_positive_int, default=None,
                    help="iterations (default: ten passes' worth of rows)")
    tr.add_argument("--k", type=_positive_int, default=1, help="mini-batch size")
    tr.add_argument("--B", type=_radius, default=None, help="radius of ||w||_p <= B, or 'auto'")
    tr.add_argument("--iterate", default="last", choices=["random", "last", "average"])
    tr.add_argument("--seed", type=int, default=None)
    tr.add_argument("--epsilon", type=float, default=None,
                    help="shape parameter of " + " / ".join(
                        f"{spec.name} (default {spec.default_epsilon:g})"
                        for spec in LOSSES if spec.has_epsilon))
    tr.add_argument("--no-intercept", action="store_true", help="do not fit an intercept")
    tr.add_argument("--n-features", type=_positive_int, default=None,
                    help="number of features (default: largest index in the data + 1)")
    tr.add_argument("--model-out", metavar="FILE", default=None,
                    help="where to save the model (default: DATA's name + .model.npz, "
                    "in the current directory)")
    tr.add_argument("--quiet", action="store_true", help="print nothing but errors")
    tr.set_defaults(func=_cmd_train)

    pr = sub.add_parser("predict", help="write a model's predictions for an svmlight file")
    pr.add_argument("model", metavar="MODEL")
    pr.add_argument("data", metavar="DATA")
    pr.add_argument("--out", metavar="FILE", help="output file (default: standard output)")
    pr.set_defaults(func=_cmd_predict)

    ev = sub.add_parser("eval", help="score a model on a labelled svmlight file")
    ev.add_argument("model", metavar="MODEL")
    ev.add_argument("data", metavar="DATA")
    ev.set_defaults(func=_cmd_eval)

    info = sub.add_parser("info", help="describe an svmlight file")
    info.add_argument("data", metavar="DATA")
    info.set_defaults(func=_cmd_info)

    demo = sub.add_parser("demo", help="train on a built-in generated data set")
    demo.set_defaults(func=_cmd_demo)
    return top


# ----------------------------------------------------------------------- helpers

def _load(path, **kw):
    from pgs import load_svmlight

    start = time.perf_counter()
    X, y = load_svmlight(path, **kw)
    return X, y, time.perf_counter() - start


def _describe(name, X, seconds=None):
    text = (f"{name}: {X.shape[0]:,} rows, {X.shape[1]:,} features, "
            f"{X.nnz:,} non-zeros")
    if seconds is not None:
        text += f" (read in {seconds:.2f} s)"
    return text


def _scores(model, X, y):
    """(name, value) pairs: accuracy or RMSE, and the objective when defined."""
    out = []
    if model.is_classifier:
        out.append(("accuracy", float(np.mean(model.predict(X) == y))))
    else:
        err = model.predict(X) - y
        out.append(("RMSE", float(np.sqrt(np.mean(err**2)))))
    try:
        out.append(("objective", float(model.objective(X, y))))
    except ValueError:
        pass  # labels outside the model's classes: no objective
    return out


def _format_scores(scores):
    return ", ".join(f"{k} {v:.4f}" if k != "objective" else f"{k} {v:.6g}"
                     for k, v in scores)


def _duration(seconds):
    if not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class _ProgressLine:
    """A `train` callback: remembers the last report and redraws one terminal line."""

    def __init__(self, stream, enabled, interval=0.25):
        self.stream = stream
        self.enabled = enabled
        self.interval = interval
        self.last = None
        self._shown = 0
        self._next = 0.0

    def __call__(self, progress):
        self.last = progress
        now = time.perf_counter()
        if self.enabled and (now >= self._next or progress.t >= progress.T):
            self._next = now + self.interval
            rate = progress.t / progress.seconds if progress.seconds > 0 else float("nan")
            eta = (progress.T - progress.t) / rate if rate > 0 else float("nan")
            text = (f"iteration {progress.t:,}/{progress.T:,} "
                    f"({100.0 * progress.t / progress.T:.0f}%)  {rate:,.0f} it/s  "
                    f"ETA {_duration(eta)}  objective ~{progress.objective_estimate:.4g}")
            self.stream.write("\r" + text.ljust(self._shown))
            self.stream.flush()
            self._shown = len(text)

    def clear(self):
        if self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0


# ----------------------------------------------------------------------- commands

def _cmd_train(args, out):
    from pgs import load_svmlight_files, train

    say = (lambda *_: None) if args.quiet else out
    start = time.perf_counter()
    files = [args.data] + ([args.test] if args.test else [])
    loaded = load_svmlight_files(files, n_features=args.n_features)
    seconds = time.perf_counter() - start
    X, y = loaded[0], loaded[1]
    say(_describe(f"data {args.data}", X, seconds))
    if args.test:
        say(_describe(f"test {args.test}", loaded[2]))

    progress = _ProgressLine(sys.stderr, enabled=not args.quiet and sys.stderr.isatty())
    T_shown = args.T if args.T is not None else "auto"
    say(f"training: loss={args.loss} p={args.p} sigma={args.sigma} T={T_shown} k={args.k} "
        f"B={args.B} iterate={args.iterate} seed={args.seed}")
    sys.stdout.flush()
    n_rows = X.shape[0]
    T_est = args.T if args.T is not None else max(1, math.ceil(10 * n_rows / args.k))
    every = max(1, min(T_est // 1000, 100_000))
    start = time.perf_counter()
    try:
        model = train(X, y, loss=args.loss, p=args.p, sigma=args.sigma, T=args.T, k=args.k,
                      B=args.B, iterate=args.iterate, seed=args.seed, epsilon=args.epsilon,
                      fit_intercept=not args.no_intercept, callback=progress,
                      callback_every=every)
    except KeyboardInterrupt:
        progress.clear()
        last = progress.last
        where = (f"at iteration {last.t:,} of {last.T:,} after {last.seconds:.1f} s"
                 if last is not None else "before the first progress report")
        print(f"pgs train: interrupted {where}; no model saved", file=sys.stderr)
        return 130
    progress.clear()
    seconds = time.perf_counter() - start
    say(f"trained in {seconds:.3f} s: T={model.T:,} iterations, returned iterate "
        f"{model.iteration:,} ({model.T / max(seconds, 1e-9):,.0f} it/s), seed "
        f"{model.params['seed']}")
    say("train: " + _format_scores(_scores(model, X, y)))
    if args.test:
        say("test:  " + _format_scores(_scores(model, loaded[2], loaded[3])))
    path = args.model_out or os.path.basename(os.fspath(args.data)) + ".model.npz"
    model.save(path)
    say(f"model saved to {path}")
    return 0


def _cmd_predict(args, out):
    from pgs import load_model
    from pgs._io import _fmt

    model = load_model(args.model)
    X, _, _ = _load(args.data, n_features=model.n_features)
    pred = model.predict(X)
    if pred.dtype.kind == "f":
        lines = [_fmt(v) for v in pred.tolist()]
    else:
        lines = [v.decode() if isinstance(v, bytes) else str(v) for v in pred.tolist()]
    text = "\n".join(lines) + ("\n" if lines else "")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_eval(args, out):
    from pgs import load_model

    model = load_model(args.model)
    X, y, seconds = _load(args.data, n_features=model.n_features)
    out(_describe(f"data {args.data}", X, seconds))
    out(f"model {args.model}: {model!r}")
    out(_format_scores(_scores(model, X, y)))
    return 0


def _cmd_info(args, out):
    X, y, seconds = _load(args.data)
    size = os.path.getsize(args.data)
    out(_describe(f"data {args.data}", X, seconds))
    per_row = np.diff(X.indptr)
    if X.shape[0]:
        out(f"non-zeros per row: min {per_row.min()}, mean {per_row.mean():.1f}, "
            f"max {per_row.max()}; density {X.nnz / max(1, X.shape[0] * X.shape[1]):.3g}")
    labels, counts = np.unique(y, return_counts=True)
    if len(labels) <= 10:
        out("labels: " + ", ".join(f"{v:g} ({c:,})" for v, c in
                                   zip(labels.tolist(), counts.tolist(), strict=True)))
    else:
        out(f"targets: {len(labels):,} distinct values, min {y.min():g}, "
            f"mean {y.mean():g}, max {y.max():g}")
    compressed = os.path.splitext(os.fspath(args.data))[1].lower() in (".gz", ".bz2", ".xz",
                                                                         ".lzma")
    if seconds > 0:
        out(f"file: {size / 1e6:.1f} MB on disk{' (compressed)' if compressed else ''}, "
            f"read at {size / 1e6 / seconds:.0f} MB/s")
    return 0


def _cmd_demo(args, out):
    from pgs._demo import run_demo

    run_demo(out=out)
    return 0


# ----------------------------------------------------------------------- entry point

def main(argv=None):
    """Run the `pgs` command line; returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 for errors, 130 when interrupted.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    out = print
    try:
        parser = _build_parser()
        args = parser.parse_args(argv)
        if args.version:
            from pgs import __version__

            out(f"pgs {__version__}")
            return 0
        if args.command is None:
            parser.print_help()
            return 0
        return args.func(args, out)
    except _UsageError as exc:
        print(f"{exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pgs: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        name = exc.filename if exc.filename is not None else ""
        reason = exc.strerror or str(exc)
        print(f"pgs: error: {name}: {reason}" if name else f"pgs: error: {reason}",
              file=sys.stderr)
        return 2
    except (ValueError, TypeError, FloatingPointError) as exc:
        print(f"pgs: error: {exc}", file=sys.stderr)
        return 2
