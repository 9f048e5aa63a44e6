"""The `pgs` command line: train, predict, eval, info and demo on svmlight files.

`pgs train` fits a `PGSClassifier` or, for a regression loss, a `PGSRegressor` with the
estimators' defaults, and saves it in the pickle-free model format. Each command reports on
stdout; a malformed input, argument or file prints one line on stderr (``pgs: error: ...``)
and exits with status 2, Ctrl-C with 130; ``--debug`` prints the traceback as well.
"""

import argparse
import contextlib
import lzma
import math
import os
import sys
import threading
import time
import traceback
import zipfile
import zlib

import numpy as np

from pgs._version import __version__
from pgs.cli.demo import run_demo
from pgs.io import write_atomic
from pgs.io.svmlight import _OPENERS, _fmt, load_svmlight_files
from pgs.models.file_format import load_model
from pgs.models.ovr import model_from_estimator
from pgs.rules.defaults import DEFAULTS
from pgs.rules.losses import loss_names
from pgs.rules.parameters import BY_NAME, describe
from pgs.rules.parameters import check as check_parameter
from pgs.rules.validation import MULTICLASS_LOSSES

_EPILOG = "Start with 'pgs demo': it trains on a built-in generated data set."

#: Exceptions that mean a bad input, argument or file: one line, exit status 2 (EOFError,
#: zlib.error, lzma.LZMAError: damaged compressed input; MemoryError: data too large).
_INPUT_ERRORS = (ValueError, TypeError, OSError, EOFError, zlib.error, lzma.LZMAError,
                 zipfile.BadZipFile, FloatingPointError, MemoryError)


class _UsageError(Exception):
    """A bad option: reported in one line, exit status 2."""


class _Interrupted(Exception):
    """Ctrl-C during a command: its one-line report, exit status 130."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def _checked(convert, ok, what):
    """An argparse type: ``convert(text)`` where ``ok`` holds, else the error 'must be
    `what`'."""
    def parse(text):
        with contextlib.suppress(ValueError):
            v = convert(text)
            if ok(v):
                return v
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return parse


_positive_int = _checked(int, lambda v: v >= 1, "an integer >= 1")
_seed = _checked(int, lambda v: v >= 0, "an integer >= 0")
_jobs = _checked(int, lambda v: v != 0, "a non-zero integer (-1: all cores)")


def _table_type(param):
    """The type of a number parameter's option: its rule in `pgs.rules.parameters` (nan
    and inf fail it), or argparse's error 'must be ...'."""
    def parse(text):
        if "auto" in param.special and text == "auto":
            return text
        with contextlib.suppress(ValueError, TypeError):
            return check_parameter(param.name, int(text) if param.kind == "count"
                                   else float(text))
        raise argparse.ArgumentTypeError(f"must be {describe(param)}, got {text!r}")
    return parse


def _estimator_options():
    """`pgs train`'s options that set an estimator parameter: (flag, parameter, keywords of
    `add_argument`). An option not given keeps the estimators' default (`pgs.DEFAULTS`, which
    its help shows), so the command line and the estimators never disagree."""
    def opt(flag, help, name=None, **keywords):
        name = name or flag[2:].replace("-", "_")
        if name in DEFAULTS and "default" not in help and "action" not in keywords:
            help += f" (default: {DEFAULTS[name]})"
        return flag, name, dict(help=help, **keywords)

    def table(name):        # (an option of `pgs.rules.parameters`: its help and values)
        param = BY_NAME[name]
        typed = dict(choices=param.choices) if param.choices else dict(type=_table_type(param))
        return opt("--" + name.replace("_", "-"), param.help, **typed)

    return [
        *map(table, ("loss", "p", "sigma", "T", "max_passes", "k", "B", "schedule", "eta0",
                     "intercept", "iterate", "sampling", "t_offset", "intercept_scaling")),
        opt("--no-intercept", "do not fit an intercept", name="fit_intercept",
            action="store_false", default=None),
        opt("--class-weight", "weigh classes by n_samples / (n_classes * count) "
            "(classification)", choices=["balanced"]),
        opt("--jobs", "threads for the one-vs-rest problems (-1: all cores; default 1)",
            name="n_jobs", type=_jobs),
        opt("--seed", "seed of the row sampling (default: fresh)", name="random_state",
            type=_seed),
        table("l1"),
        table("epsilon"),
    ]


def build_estimator(args):
    """The estimator `pgs train` fits for its parsed `args`: only the options given set a
    parameter."""
    try:
        from pgs.estimators import PGSClassifier, PGSRegressor
    except ImportError as exc:
        raise _UsageError(f"pgs train needs scikit-learn: pip install pgs[sklearn] ({exc})"
                          ) from None
    loss = args.loss or DEFAULTS["loss"]
    cls = PGSRegressor if loss in loss_names("regression") else PGSClassifier
    accepted = cls().get_params()
    params = {}
    for flag, name, _ in _estimator_options():
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is None:
            continue
        if name not in accepted:
            raise _UsageError(f"pgs train: argument {flag}: not available for "
                              f"{cls.__name__} (loss {args.loss!r})")
        params[name] = value
    return cls(**params)


def _build_parser():
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="on an error, print the traceback too")

    top = _Parser(prog="pgs", epilog=_EPILOG, parents=[common], description="Train "
                  "lp-regularised linear models with the Primal Gradient Solver on svmlight / "
                  "libsvm files.")
    top.add_argument("--version", action="version", version=f"pgs {__version__}",
                     help="print the version and exit")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    tr = sub.add_parser(
        "train", parents=[common],
        help="train a model on an svmlight file and save it",
        description="Train on DATA (binary or multiclass labels: PGSClassifier, one-vs-rest; "
        "real targets with a regression loss: PGSRegressor), report accuracy (or RMSE and "
        "R^2), and save the model. Options not given take the estimators' defaults.")
    tr.add_argument("data", metavar="DATA", help="training data (svmlight; .gz/.bz2/.xz ok)")
    tr.add_argument("--test", metavar="TEST", help="test data, reported after training")
    for flag, _, keywords in _estimator_options():
        tr.add_argument(flag, **keywords)
    tr.add_argument("--n-features", type=_positive_int, default=None,
                    help="number of features (default: largest index in the data + 1)")
    tr.add_argument("--model-out", metavar="FILE", default=None,
                    help="where to save the model (default: DATA's name + .model.npz, in the "
                    "current directory); an existing file is replaced only by a complete new model")
    tr.add_argument("--quiet", action="store_true", help="print nothing but errors")
    tr.set_defaults(func=_cmd_train)

    pr = sub.add_parser("predict", parents=[common],
                        help="write a model's predictions for an svmlight file")
    ev = sub.add_parser("eval", parents=[common], help="score a model on a labelled svmlight file")
    for command, func in ((pr, _cmd_predict), (ev, _cmd_eval)):
        command.add_argument("model", metavar="MODEL")
        command.add_argument("data", metavar="DATA")
        command.set_defaults(func=func)
    pr.add_argument("--proba", action="store_true", help="class probabilities (models of loss "
                    "logistic, modified_huber or multinomial): a first line 'labels C1 C2 ...', "
                    "then per row the predicted label and one probability per class")
    pr.add_argument("--out", metavar="FILE", help="output file (default: standard output)")

    info = sub.add_parser("info", parents=[common], help="describe an svmlight file")
    info.add_argument("data", metavar="DATA")
    info.set_defaults(func=_cmd_info)

    demo = sub.add_parser("demo", parents=[common], help="train on a built-in generated data set")
    demo.set_defaults(func=lambda args, out: run_demo(out=out))
    return top


def _load(paths, **kw):
    """`load_svmlight_files` on `paths`, and the seconds it took."""
    start = time.perf_counter()
    return load_svmlight_files(paths, **kw), time.perf_counter() - start


def _describe(name, X, seconds=None):
    read = f" (read in {seconds:.2f} s)" if seconds is not None else ""
    return f"{name}: {X.shape[0]:,} rows, {X.shape[1]:,} features, {X.nnz:,} non-zeros{read}"


def _scores(model, X, y, with_objective=True):
    """'accuracy A', or 'RMSE E, R^2 R'; and the objective when defined."""
    out = []
    pred = model.predict(X)
    if model.is_classifier:
        out.append(f"accuracy {np.mean(pred == y):.4f}")
    else:
        y = np.asarray(y, dtype=np.float64)
        sse = float(np.sum((pred - y) ** 2))
        sst = float(np.sum((y - y.mean()) ** 2)) if y.size else 0.0
        out.append(f"RMSE {math.sqrt(sse / y.size) if y.size else math.nan:.4f}")
        out.append(f"R^2 {1.0 - sse / sst if sst > 0 else math.nan:.4f}")
    if with_objective:
        try:
            out.append(f"objective {float(model.objective(X, y)):.6g}")
        except (ValueError, NotImplementedError):
            pass  # labels outside the model's classes, or a kind without one objective
    return ", ".join(out)


def _check_continuous(y, path):
    """Real-valued targets with a classification loss: say to use a regression loss."""
    if y.dtype.kind == "f" and y.size and not np.all(np.floor(y) == y):
        example = y[np.flatnonzero(np.floor(y) != y)[0]]
        raise ValueError(f"{path} has real-valued targets (e.g. {example:g}), not class labels: "
                         f"use a regression loss, --loss {'|'.join(loss_names('regression'))}")


def _check_model_out(path):
    """Refuse a model path that cannot be written before training, not after."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"--model-out {path} is a directory")
    if not os.path.isdir(directory):
        raise ValueError(f"--model-out {path}: the directory {directory} does not exist")


class _Elapsed(threading.Thread):
    """Redraws 'training WHAT: 12 s' on `stream` (a terminal) every 0.25 s until `stop`, with
    the fit's latest `status` (sigma="auto": the halving rung or the pass, its held-out score
    and a bound on the time left)."""

    def __init__(self, stream, what):
        super().__init__(name="pgs-cli-ticker", daemon=True)
        self.stream, self.what, self.began = stream, what, time.perf_counter()
        self.status, self.shown, self.done = "", 0, threading.Event()

    def run(self):
        while not self.done.wait(0.25):
            text = f"training {self.what}: {time.perf_counter() - self.began:.0f} s"
            if self.status:
                text = (text + " | " + self.status)[:119]
            self.stream.write("\r" + text.ljust(self.shown))
            self.stream.flush()
            self.shown = len(text)

    def stop(self):
        self.done.set()
        if self.is_alive():
            self.join()
        if self.shown:
            self.stream.write("\r" + " " * self.shown + "\r")
            self.stream.flush()


def _kept(path):
    return f"; {path} left as it was" if os.path.exists(path) else ""


def _params_text(estimator):
    params = estimator.get_params()
    shown = {"loss": params["loss"]}
    shown.update((k, v) for k, v in params.items() if k != "warm_start")
    shown["T"] = shown["T"] if shown["T"] is not None else "auto"
    return " ".join(f"{k}={v}" for k, v in shown.items())


def _cmd_train(args, out):
    say = (lambda *_: None) if args.quiet else out
    path = args.model_out or os.path.basename(os.fspath(args.data)) + ".model.npz"
    _check_model_out(path)
    estimator = build_estimator(args)
    estimator._check_params()                  # options checked before the data is read
    is_classifier = hasattr(estimator, "class_weight")

    try:
        loaded, seconds = _load([args.data] + ([args.test] if args.test else []),
                                n_features=args.n_features)
    except KeyboardInterrupt:
        raise _Interrupted(f"pgs train: interrupted while reading the data; no model "
                           f"saved{_kept(path)}") from None
    X, y = loaded[0], loaded[1]
    say(_describe(f"data {args.data}", X, seconds))
    if args.test:
        say(_describe(f"test {args.test}", loaded[2]))
    if is_classifier:
        _check_continuous(y, args.data)
        labels = np.unique(y)
        task = f"{len(labels)} classes" + (
            f", one problem of {len(labels)} outputs" if estimator.loss in MULTICLASS_LOSSES
            else ", one-vs-rest or one problem of K outputs, chosen" if len(labels) > 2
            and estimator.loss == "auto" else ", one-vs-rest" if len(labels) > 2 else "")
    else:
        task = "regression"
    say(f"training {type(estimator).__name__} ({task}): {_params_text(estimator)}")
    sys.stdout.flush()

    # (in this thread: the fit runs in chunks and waits for its threads in slices,
    # pgs.engine.chunks, so Ctrl-C stops it within a fraction of a second)
    ticker = _Elapsed(sys.stderr, args.data)
    if not args.quiet and sys.stderr.isatty():
        ticker.start()
    if not estimator.verbose:   # (the search's lines go to the ticker; --verbose prints them)
        estimator.set_params(verbose=lambda text: setattr(ticker, "status", text))
    start = time.perf_counter()
    try:
        estimator.fit(X, y)
    except KeyboardInterrupt:
        raise _Interrupted(f"pgs train: interrupted after {time.perf_counter() - start:.1f} s "
                           f"of training; no model saved{_kept(path)}") from None
    finally:
        ticker.stop()
    seconds = time.perf_counter() - start
    model = model_from_estimator(estimator)
    chosen = getattr(estimator, "sigma_", None)
    say(f"trained in {seconds:.3f} s: T={model.T:,} iterations per problem "
        f"({estimator.n_iter_:.3g} passes), iterate "
        f"{model.params['iterate']}, seed {model.params['seed']}"
        + (f", sigma chosen {chosen:g}" if chosen is not None else "")
        + (f", loss chosen {estimator.loss_}" if estimator.loss == "auto" else ""))
    weighted = is_classifier and estimator.class_weight is not None
    say("train: " + _scores(model, X, y, with_objective=not weighted))
    if args.test:
        say("test:  " + _scores(model, loaded[2], loaded[3], with_objective=not weighted))
    model.save(path)
    say(f"model saved to {path}")


def _label(v):
    """A label or prediction as text (floats as the svmlight writer writes them)."""
    return _fmt(v) if isinstance(v, float) else v.decode() if isinstance(v, bytes) else str(v)


def _cmd_predict(args, out):
    model = load_model(args.model)
    if args.proba:
        if model.classes is None:
            raise ValueError(f"--proba: {args.model} is a regression model (no classes)")
        model.predict_proba(np.zeros((0, model.n_features)))  # (a probabilistic loss?)
    (X, _), _ = _load([args.data], n_features=model.n_features)
    lines = [_label(v) for v in model.predict(X).tolist()]
    if args.proba:
        proba = model.predict_proba(X)
        lines = (["labels " + " ".join(_label(c) for c in model.classes.tolist())]
                 + [label + " " + " ".join(f"{p:.6g}" for p in row)
                    for label, row in zip(lines, proba.tolist(), strict=True)])
    text = "\n".join(lines) + ("\n" if lines else "")
    if args.out:
        write_atomic(args.out, lambda fh: fh.write(text.encode("utf-8")))
    else:
        sys.stdout.write(text)


def _cmd_eval(args, out):
    model = load_model(args.model)
    (X, y), seconds = _load([args.data], n_features=model.n_features)
    out(_describe(f"data {args.data}", X, seconds))
    out(f"model {args.model}: {model!r}")
    weighted = model.params.get("class_weight") is not None
    out(_scores(model, X, y, with_objective=not weighted))


def _cmd_info(args, out):
    (X, y), seconds = _load([args.data])
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
    compressed = os.path.splitext(os.fspath(args.data))[1].lower() in _OPENERS
    if seconds > 0:
        out(f"file: {size / 1e6:.1f} MB on disk{' (compressed)' if compressed else ''}, "
            f"read at {size / 1e6 / seconds:.0f} MB/s")


def _one_line(text):
    return " ".join(str(text).split())


def _error_line(exc):
    """The one-line message of an input error."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"pgs: error: {where}{exc.strerror}"
    if isinstance(exc, MemoryError):
        return f"pgs: error: out of memory{': ' + str(exc) if str(exc) else ''}"
    if isinstance(exc, (ValueError, OSError)) and str(exc):
        return f"pgs: error: {_one_line(exc)}"
    return f"pgs: error: {type(exc).__name__}: {_one_line(exc)}"


def main(argv=None):
    """Run the `pgs` command line on `argv` (default ``sys.argv[1:]``); the exit status: 0 on
    success, 2 for errors in the input, arguments or files, 130 when interrupted, 1 for an
    unexpected internal error."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    out = print
    try:
        parser = _build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 0
        args.func(args, out)            # (a command's report on stdout)
    except _UsageError as exc:
        error, status, message = exc, 2, _one_line(exc)
    except _Interrupted as exc:
        error, status, message = exc, 130, str(exc)
    except KeyboardInterrupt as exc:
        error, status, message = exc, 130, "pgs: interrupted"
    except _INPUT_ERRORS as exc:
        error, status, message = exc, 2, _error_line(exc)
    except Exception as exc:  # noqa: BLE001 (a bug: still one line, and --debug)
        error, status = exc, 1
        message = (f"pgs: internal error: {type(exc).__name__}: {_one_line(exc)} (run with "
                   f"--debug for the traceback, and please report it)")
    else:
        return 0
    if debug:
        traceback.print_exception(error)
    print(message, file=sys.stderr)
    return status
