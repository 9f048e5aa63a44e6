"""The `pgs` command line: train, predict, eval, info and demo on svmlight files.

`pgs train` fits a `PGSClassifier` (binary or one-vs-rest multiclass) or, for a
regression loss, a `PGSRegressor`, with the estimators' own defaults, and saves it in
the pickle-free model format that `pgs predict`, `pgs eval` and `pgs.load_model` read.

Every command prints a short report on stdout. The error contract: a malformed input,
argument or file prints one line on stderr (``pgs: error: ...``, naming the file and
line, or the argument) and exits with status 2; Ctrl-C prints one line and exits with
status 130. ``--debug`` prints the traceback as well. An existing model file is
replaced only by a complete new one (`pgs.Model.save` is atomic).
"""

import argparse
import inspect
import lzma
import math
import os
import re
import sys
import threading
import time
import traceback
import zipfile
import zlib

import numpy as np

_EPILOG = "Start with 'pgs demo': it trains on a built-in generated data set."

#: Exceptions that mean a bad input, argument or file: one line, exit status 2.
#: (EOFError, zlib.error and lzma.LZMAError: damaged compressed input; MemoryError: data
#: too large for this machine.)
_INPUT_ERRORS = (ValueError, TypeError, OSError, EOFError, zlib.error, lzma.LZMAError,
                 zipfile.BadZipFile, FloatingPointError, MemoryError)


class _UsageError(Exception):
    """A bad option: reported in one line, exit status 2."""


class _Interrupted(Exception):
    """Ctrl-C during a command: its one-line report, exit status 130."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


class _Formatter(argparse.HelpFormatter):
    """Fills in '<<name>>' with the estimators' default of `name` when help is shown
    (so that only `pgs train` and help import scikit-learn)."""

    def _get_help_string(self, action):
        return re.sub(r"<<(\w+)>>", lambda m: _default_text(m.group(1)), action.help)


# ----------------------------------------------------------------------- argument types

def _number(text, *, low, strict, what, allow_auto=False):
    if allow_auto and text == "auto":
        return "auto"
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and (v > low if strict else v >= low)):
        auto = " or 'auto'" if allow_auto else ""
        raise argparse.ArgumentTypeError(f"must be {what}{auto}, got {text!r}")
    return v


def _positive_float(text):
    return _number(text, low=0.0, strict=True, what="a positive number")


def _positive_or_auto(text):
    return _number(text, low=0.0, strict=True, what="a positive number", allow_auto=True)


def _non_negative_or_auto(text):
    return _number(text, low=0.0, strict=False, what="a number >= 0", allow_auto=True)


def _non_negative_float(text):
    return _number(text, low=0.0, strict=False, what="a number >= 0")


def _p_value(text):
    v = _number(text, low=1.0, strict=True, what="a number in (1, 2]")
    if v > 2.0:
        raise argparse.ArgumentTypeError(f"must be a number in (1, 2], got {text!r}")
    return v


def _positive_int(text):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return v


def _seed(text):
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return v


def _jobs(text):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v == 0:
        raise argparse.ArgumentTypeError(
            f"must be a non-zero integer (-1: all cores), got {text!r}")
    return v


# ----------------------------------------------------------------------- the estimators

#: `pgs train` option -> the estimators' parameter it sets. Options left out keep the
#: estimator's default, read from its signature, so the command line and the
#: estimators never disagree.
_OPTION_PARAMS = {
    "loss": "loss", "p": "p", "sigma": "sigma", "T": "T", "k": "k", "B": "B",
    "schedule": "schedule", "eta0": "eta0", "intercept": "intercept",
    "iterate": "iterate", "seed": "random_state", "epsilon": "epsilon",
    "intercept_scaling": "intercept_scaling", "sampling": "sampling",
    "t_offset": "t_offset", "class_weight": "class_weight", "jobs": "n_jobs",
}


def _estimator_classes():
    try:
        from pgs.estimators import PGSClassifier, PGSRegressor
    except ImportError as exc:
        raise _UsageError(f"pgs train needs scikit-learn: pip install pgs[sklearn] ({exc})"
                          ) from None
    return PGSClassifier, PGSRegressor


def estimator_defaults(cls):
    """The defaults of `cls.__init__`, as {parameter: default}.

    Parameters
    ----------
    cls : type
        PGSClassifier or PGSRegressor.

    Returns
    -------
    dict
    """
    return {name: par.default for name, par in inspect.signature(cls.__init__).parameters.items()
            if par.default is not inspect.Parameter.empty}


def _is_regression(loss, classifier_cls):
    """True for a regression loss ("squared" is regression on the command line)."""
    from pgs.rules.losses import loss_names

    if loss is None:
        loss = estimator_defaults(classifier_cls)["loss"]
    return loss in loss_names("regression")


def build_estimator(args):
    """The estimator `pgs train` fits for parsed `args`: only the options given are set.

    Parameters
    ----------
    args : argparse.Namespace
        As parsed by the ``train`` sub-command.

    Returns
    -------
    PGSClassifier or PGSRegressor
    """
    classifier, regressor = _estimator_classes()
    cls = regressor if _is_regression(args.loss, classifier) else classifier
    accepted = estimator_defaults(cls)
    params = {}
    for option, name in _OPTION_PARAMS.items():
        value = getattr(args, option)
        if value is None:
            continue
        if name not in accepted:
            flag = "--" + option.replace("_", "-")
            raise _UsageError(f"pgs train: argument {flag}: not available for "
                              f"{cls.__name__} (loss {args.loss!r})")
        params[name] = value
    if args.no_intercept:
        params["fit_intercept"] = False
    return cls(**params)


# ----------------------------------------------------------------------- the parser

def _default_text(name):
    """'default: X' from the estimators' signatures (both values when they differ)."""
    try:
        classifier, regressor = _estimator_classes()
    except _UsageError:
        return "default: the estimator's"
    c = estimator_defaults(classifier).get(name, inspect.Parameter.empty)
    r = estimator_defaults(regressor).get(name, inspect.Parameter.empty)
    if r is inspect.Parameter.empty or c == r:
        return f"default: {c}"
    return f"default: {c}; regression {r}"


def _build_parser():
    from pgs._core import SAMPLING_MODES
    from pgs.rules.defaults import INTERCEPTS, SCHEDULES
    from pgs.rules.losses import LOSS_NAMES, LOSSES, loss_names
    from pgs.rules.validation import ITERATES

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true",
                        help="on an error, print the traceback too")

    top = _Parser(prog="pgs", description="Train lp-regularised linear models with the "
                  "Primal Gradient Solver on svmlight / libsvm files.", epilog=_EPILOG,
                  parents=[common])
    top.add_argument("--version", action="store_true", help="print the version and exit")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    tr = sub.add_parser(
        "train", parents=[common], formatter_class=_Formatter,
        help="train a model on an svmlight file and save it",
        description="Train on DATA (binary or multiclass labels: PGSClassifier, one-vs-rest; "
        "real targets with a regression loss: PGSRegressor), report accuracy (or RMSE and "
        "R^2), and save the model. Options not given take the estimators' defaults.")
    tr.add_argument("data", metavar="DATA", help="training data (svmlight; .gz/.bz2/.xz ok)")
    tr.add_argument("--test", metavar="TEST", help="test data, reported after training")
    tr.add_argument("--loss", choices=LOSS_NAMES,
                    help=f"classification: {', '.join(loss_names('classification'))}; "
                    f"regression: {', '.join(loss_names('regression'))} "
                    f"(<<loss>>)")
    tr.add_argument("--p", type=_p_value, help="norm of the regulariser, in (1, 2] "
                    "(<<p>>)")
    tr.add_argument("--sigma", type=_positive_or_auto,
                    help="regularisation strength, or 'auto' to choose it on a held-out "
                    "split (<<sigma>>)")
    tr.add_argument("--T", type=_positive_int,
                    help="iterations per problem (<<T>>; None: the estimators' number of passes)")
    tr.add_argument("--k", type=_positive_int, help="mini-batch size (<<k>>)")
    tr.add_argument("--B", type=_positive_or_auto,
                    help="radius of ||w||_p <= B, or 'auto' (<<B>>)")
    tr.add_argument("--schedule", choices=SCHEDULES,
                    help="step schedule: averaged SGD's or the paper's (<<schedule>>)")
    tr.add_argument("--eta0", type=_positive_or_auto,
                    help="first step of the asgd schedule, or 'auto' (<<eta0>>)")
    tr.add_argument("--intercept", choices=INTERCEPTS,
                    help="a free bias, or a regularised constant column (<<intercept>>)")
    tr.add_argument("--iterate", choices=ITERATES,
                    help="the iterate returned (<<iterate>>)")
    tr.add_argument("--sampling", choices=SAMPLING_MODES + ("auto",),
                    help="how rows are drawn (<<sampling>>)")
    tr.add_argument("--t-offset", dest="t_offset", type=_non_negative_or_auto,
                    help="offset t0 of the steps 1/(sigma (t + t0)), or 'auto' "
                    "(<<t_offset>>)")
    tr.add_argument("--intercept-scaling", dest="intercept_scaling", type=_positive_or_auto,
                    help="value of the constant column that carries the intercept, or "
                    "'auto' (<<intercept_scaling>>)")
    tr.add_argument("--class-weight", dest="class_weight", choices=["balanced"],
                    help="weigh classes by n_samples / (n_classes * count) (classification)")
    tr.add_argument("--jobs", type=_jobs,
                    help="threads for the one-vs-rest problems (-1: all cores; default 1)")
    tr.add_argument("--seed", type=_seed, help="seed of the row sampling (default: fresh)")
    tr.add_argument("--epsilon", type=_non_negative_float, default=None,
                    help="shape parameter of " + " / ".join(
                        f"{spec.name} (default {spec.default_epsilon:g})"
                        for spec in LOSSES if spec.has_epsilon))
    tr.add_argument("--no-intercept", action="store_true", help="do not fit an intercept")
    tr.add_argument("--n-features", type=_positive_int, default=None,
                    help="number of features (default: largest index in the data + 1)")
    tr.add_argument("--model-out", metavar="FILE", default=None,
                    help="where to save the model (default: DATA's name + .model.npz, "
                    "in the current directory); an existing file is replaced only by a "
                    "complete new model")
    tr.add_argument("--quiet", action="store_true", help="print nothing but errors")
    tr.set_defaults(func=_cmd_train)

    pr = sub.add_parser("predict", parents=[common],
                        help="write a model's predictions for an svmlight file")
    pr.add_argument("model", metavar="MODEL")
    pr.add_argument("data", metavar="DATA")
    pr.add_argument("--proba", action="store_true",
                    help="class probabilities (models of loss logistic or modified_huber): "
                    "a first line 'labels C1 C2 ...', then per row the predicted label and "
                    "one probability per class")
    pr.add_argument("--out", metavar="FILE", help="output file (default: standard output)")
    pr.set_defaults(func=_cmd_predict)

    ev = sub.add_parser("eval", parents=[common],
                        help="score a model on a labelled svmlight file")
    ev.add_argument("model", metavar="MODEL")
    ev.add_argument("data", metavar="DATA")
    ev.set_defaults(func=_cmd_eval)

    info = sub.add_parser("info", parents=[common], help="describe an svmlight file")
    info.add_argument("data", metavar="DATA")
    info.set_defaults(func=_cmd_info)

    demo = sub.add_parser("demo", parents=[common],
                          help="train on a built-in generated data set")
    demo.set_defaults(func=_cmd_demo)
    return top


# ----------------------------------------------------------------------- helpers

#: Set while a command's work runs in a thread that Ctrl-C abandoned (see `_wait_for`).
_abandoned = threading.Event()


def _wait_for(fn, *args, ticker=None):
    """``fn(*args)`` run in a worker thread, the main thread waiting for it.

    The compiled readers and solvers run long stretches without returning to Python;
    in a worker thread they leave the main thread free to take Ctrl-C at once (it
    raises KeyboardInterrupt here, and `main` reports it). `ticker`, if given, is
    called about four times a second while waiting.
    """
    box = {}

    def work():
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 (re-raised in the main thread)
            box["error"] = exc

    worker = threading.Thread(target=work, name="pgs-cli-work", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.25)
            if ticker is not None and worker.is_alive():
                ticker()
    except KeyboardInterrupt:
        _abandoned.set()
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def _read_error(path, exc):
    """A damaged compressed file's exception as a ValueError naming the file."""
    reason = str(exc) or type(exc).__name__
    return ValueError(f"{path}: the compressed data is truncated or corrupt ({reason})")


def _load(path, **kw):
    from pgs.io.svmlight import load_svmlight

    start = time.perf_counter()
    try:
        X, y = _wait_for(lambda: load_svmlight(path, **kw))
    except (EOFError, zlib.error, lzma.LZMAError) as exc:
        raise _read_error(path, exc) from exc
    return X, y, time.perf_counter() - start


def _describe(name, X, seconds=None):
    text = (f"{name}: {X.shape[0]:,} rows, {X.shape[1]:,} features, "
            f"{X.nnz:,} non-zeros")
    if seconds is not None:
        text += f" (read in {seconds:.2f} s)"
    return text


def _scores(model, X, y, with_objective=True):
    """(name, value) pairs: accuracy, or RMSE and R^2; and the objective when defined."""
    out = []
    pred = model.predict(X)
    if model.is_classifier:
        out.append(("accuracy", float(np.mean(pred == y))))
    else:
        y = np.asarray(y, dtype=np.float64)
        sse = float(np.sum((pred - y) ** 2))
        sst = float(np.sum((y - y.mean()) ** 2)) if y.size else 0.0
        out.append(("RMSE", math.sqrt(sse / y.size) if y.size else math.nan))
        out.append(("R^2", 1.0 - sse / sst if sst > 0 else math.nan))
    if with_objective:
        try:
            out.append(("objective", float(model.objective(X, y))))
        except (ValueError, NotImplementedError):
            pass  # labels outside the model's classes, or a kind without one objective
    return out


def _format_scores(scores):
    return ", ".join(f"{k} {v:.6g}" if k == "objective" else f"{k} {v:.4f}"
                     for k, v in scores)


def _check_continuous(y, path):
    """Real-valued targets with a classification loss: say to use a regression loss."""
    from pgs.rules.losses import loss_names

    if y.dtype.kind == "f" and y.size and not np.all(np.floor(y) == y):
        example = y[np.flatnonzero(np.floor(y) != y)[0]]
        raise ValueError(f"{path} has real-valued targets (e.g. {example:g}), not class "
                         f"labels: use a regression loss, --loss "
                         f"{'|'.join(loss_names('regression'))}")


def _check_model_out(path):
    """Refuse a model path that cannot be written before training, not after."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"--model-out {path} is a directory")
    if not os.path.isdir(directory):
        raise ValueError(f"--model-out {path}: the directory {directory} does not exist")


class _Elapsed:
    """Redraws 'training ... 12 s' on a terminal while the fit runs."""

    def __init__(self, stream, enabled, what):
        self.stream, self.enabled, self.what = stream, enabled, what
        self.start = time.perf_counter()
        self._shown = 0

    def __call__(self):
        if self.enabled:
            text = f"training {self.what}: {time.perf_counter() - self.start:.0f} s"
            self.stream.write("\r" + text.ljust(self._shown))
            self.stream.flush()
            self._shown = len(text)

    def clear(self):
        if self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0


def _kept(path):
    return f"; {path} left as it was" if os.path.exists(path) else ""


def _params_text(estimator):
    params = estimator.get_params()
    shown = {"loss": params["loss"]}
    shown.update((k, v) for k, v in params.items() if k != "warm_start")
    shown["T"] = shown["T"] if shown["T"] is not None else "auto"
    return " ".join(f"{k}={v}" for k, v in shown.items())


# ----------------------------------------------------------------------- commands

def _cmd_train(args, out):
    from pgs.io.svmlight import load_svmlight_files
    from pgs.models.ovr import model_from_estimator

    say = (lambda *_: None) if args.quiet else out
    path = args.model_out or os.path.basename(os.fspath(args.data)) + ".model.npz"
    _check_model_out(path)
    estimator = build_estimator(args)
    estimator._check_params()                  # options checked before the data is read
    is_classifier = hasattr(estimator, "class_weight")

    start = time.perf_counter()
    files = [args.data] + ([args.test] if args.test else [])
    try:
        loaded = _wait_for(lambda: load_svmlight_files(files, n_features=args.n_features))
    except (EOFError, zlib.error, lzma.LZMAError) as exc:
        raise _read_error(" or ".join(map(str, files)), exc) from exc
    except KeyboardInterrupt:
        raise _Interrupted(f"pgs train: interrupted while reading the data; no model "
                           f"saved{_kept(path)}") from None
    seconds = time.perf_counter() - start
    X, y = loaded[0], loaded[1]
    say(_describe(f"data {args.data}", X, seconds))
    if args.test:
        say(_describe(f"test {args.test}", loaded[2]))
    if is_classifier:
        _check_continuous(y, args.data)
        labels = np.unique(y)
        task = f"{len(labels)} classes" + (", one-vs-rest" if len(labels) > 2 else "")
    else:
        task = "regression"
    say(f"training {type(estimator).__name__} ({task}): {_params_text(estimator)}")
    sys.stdout.flush()

    ticker = _Elapsed(sys.stderr, not args.quiet and sys.stderr.isatty(), args.data)
    start = time.perf_counter()
    try:
        _wait_for(estimator.fit, X, y, ticker=ticker)
    except KeyboardInterrupt:
        ticker.clear()
        raise _Interrupted(f"pgs train: interrupted after {time.perf_counter() - start:.1f} s "
                           f"of training; no model saved{_kept(path)}") from None
    finally:
        ticker.clear()
    seconds = time.perf_counter() - start
    model = model_from_estimator(estimator)
    chosen = getattr(estimator, "sigma_", None)
    say(f"trained in {seconds:.3f} s: T={model.T:,} iterations per problem, iterate "
        f"{model.params['iterate']}, seed {model.params['seed']}"
        + (f", sigma chosen {chosen:g}" if chosen is not None else ""))
    weighted = is_classifier and estimator.class_weight is not None
    say("train: " + _format_scores(_scores(model, X, y, with_objective=not weighted)))
    if args.test:
        say("test:  " + _format_scores(_scores(model, loaded[2], loaded[3],
                                                with_objective=not weighted)))
    model.save(path)
    say(f"model saved to {path}")
    return 0


def _write_atomic(path, text):
    """Write `text` to `path` through a temporary file, so no partial output is left."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=".pgs-out-", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _label_text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def _cmd_predict(args, out):
    from pgs.io.svmlight import _fmt
    from pgs.models.file_format import load_model
    from pgs.models.ovr import class_probabilities

    model = load_model(args.model)
    if args.proba:
        if model.classes is None:
            raise ValueError(f"--proba: {args.model} is a regression model (no classes)")
        class_probabilities(model, np.zeros((0, model.n_features)))  # loss has probabilities?
    X, _, _ = _load(args.data, n_features=model.n_features)
    pred = model.predict(X)
    if pred.dtype.kind == "f":
        labels = [_fmt(v) for v in pred.tolist()]
    else:
        labels = [_label_text(v) for v in pred.tolist()]
    if args.proba:
        proba = class_probabilities(model, X)
        header = "labels " + " ".join(_label_text(c) if not isinstance(c, float) else _fmt(c)
                                      for c in model.classes.tolist())
        lines = [header] + [label + " " + " ".join(f"{p:.6g}" for p in row)
                            for label, row in zip(labels, proba.tolist(), strict=True)]
    else:
        lines = labels
    text = "\n".join(lines) + ("\n" if lines else "")
    if args.out:
        _write_atomic(args.out, text)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_eval(args, out):
    from pgs.models.file_format import load_model

    model = load_model(args.model)
    X, y, seconds = _load(args.data, n_features=model.n_features)
    out(_describe(f"data {args.data}", X, seconds))
    out(f"model {args.model}: {model!r}")
    weighted = model.params.get("class_weight") is not None
    out(_format_scores(_scores(model, X, y, with_objective=not weighted)))
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
    from pgs.cli.demo import run_demo

    run_demo(out=out)
    return 0


# ----------------------------------------------------------------------- entry point

def _one_line(text):
    return " ".join(str(text).split())


def _error_line(exc):
    """The one-line message of an input error."""
    if isinstance(exc, OSError) and exc.strerror:
        name = exc.filename if exc.filename is not None else ""
        return f"pgs: error: {name}: {exc.strerror}" if name else f"pgs: error: {exc.strerror}"
    if isinstance(exc, MemoryError):
        return f"pgs: error: out of memory{': ' + str(exc) if str(exc) else ''}"
    if isinstance(exc, (ValueError, OSError)) and str(exc):
        return f"pgs: error: {_one_line(exc)}"
    return f"pgs: error: {type(exc).__name__}: {_one_line(exc)}"


def main(argv=None):
    """Run the `pgs` command line; returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``, i.e. run as the
        program: then Ctrl-C during a long read or fit ends the process at once).

    Returns
    -------
    int
        0 on success, 2 for errors in the input, arguments or files, 130 when
        interrupted, 1 for an unexpected internal error.
    """
    as_program = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    out = print
    try:
        parser = _build_parser()
        args = parser.parse_args(argv)
        if args.version:
            from pgs._version import __version__

            out(f"pgs {__version__}")
            return 0
        if args.command is None:
            parser.print_help()
            return 0
        status = args.func(args, out)
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
        return status
    if debug:
        traceback.print_exception(error)
    print(message, file=sys.stderr)
    if status == 130 and as_program and _abandoned.is_set():
        # A compiled reader or solver is still running in the abandoned worker thread:
        # end the process now (nothing is being written; a model is saved only after
        # the fit, atomically) rather than wait for it or finalise under it.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    return status
