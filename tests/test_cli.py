"""The `pgs` command line, end to end: every problem, the estimators' defaults, the error
contract (one line on stderr, exit status 2; Ctrl-C 130) through subprocesses."""

import gzip
import lzma
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import pgs
from pgs.cli.demo import make_sparse_classification
from pgs.cli.main import _build_parser, build_estimator, main

sklearn = pytest.importorskip("sklearn")
from pgs.estimators import PGSClassifier, PGSRegressor  # noqa: E402

# Subprocesses start outside the checkout: `python -m pgs` from the repository root
# would import the source tree (no compiled extensions) instead of the installed package.
NEUTRAL_CWD = tempfile.gettempdir()


def run(*args, timeout=120, **kw):
    kw.setdefault("cwd", NEUTRAL_CWD)
    return subprocess.run([sys.executable, "-m", "pgs", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, **kw)


class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def run_here(capsys):
    """Run the CLI in this process (faster than a subprocess)."""
    def call(*args):
        capsys.readouterr()
        rc = main([str(a) for a in args])
        out = capsys.readouterr()
        return Result(rc, out.out, out.err)
    return call


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    X, y = make_sparse_classification(n_samples=3000, n_features=400, nnz_per_row=15, seed=1)
    pgs.dump_svmlight(X[:2400], y[:2400], d / "train.svm", zero_based=False)
    pgs.dump_svmlight(X[2400:], y[2400:], d / "test.svm", zero_based=False)
    # Three classes: which of three feature groups weighs most in the row.
    groups = np.column_stack([np.asarray(X[:, g::3].sum(axis=1)).ravel() for g in range(3)])
    pgs.dump_svmlight(X, (np.argmax(groups, axis=1) + 1).astype(float), d / "multi.svm",
                      zero_based=False)
    rng = np.random.default_rng(0)
    target = X @ rng.standard_normal(400) + 0.1 * rng.standard_normal(3000)
    pgs.dump_svmlight(X, target, d / "reg.svm", zero_based=False)
    return d


def parse_train(*options):
    return _build_parser().parse_args(["train", "DATA", *map(str, options)])


def one_error_line(res, pattern, status=2):
    assert res.returncode == status, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert pattern in lines[0], lines[0]
    assert "Traceback" not in res.stderr


# ----------------------------------------------------------------------- basics

def test_no_arguments_shows_help_pointing_to_demo():
    res = run()
    assert res.returncode == 0
    assert "usage: pgs" in res.stdout and "pgs demo" in res.stdout


def test_demo():
    res = run("demo")
    assert res.returncode == 0, res.stderr
    assert "test accuracy" in res.stdout


def test_info(data, run_here):
    res = run_here("info", data / "train.svm")
    assert res.returncode == 0, res.stderr
    assert "2,400 rows" in res.stdout and "labels: -1" in res.stdout


def test_quiet_and_default_model_path(data, tmp_path, run_here, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = run_here("train", data / "train.svm", "--quiet", "--T", "1000")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "" and res.stderr == ""
    assert (tmp_path / "train.svm.model.npz").exists()


# ----------------------------------------------------------------------- defaults

@pytest.mark.parametrize("loss,cls", [(None, PGSClassifier), ("logistic", PGSClassifier),
                                      ("squared", PGSRegressor), ("huber", PGSRegressor)])
def test_defaults_are_the_estimators(loss, cls):
    est = build_estimator(parse_train(*(["--loss", loss] if loss else [])))
    assert type(est) is cls
    expected = cls() if loss is None else cls(loss=loss)
    assert est.get_params() == expected.get_params()


def test_help_shows_the_estimators_defaults(capsys):
    defaults = PGSClassifier().get_params()
    with pytest.raises(SystemExit) as exc:
        main(["train", "--help"])
    assert exc.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    for name in ("iterate", "sampling", "t_offset", "intercept_scaling", "sigma", "schedule",
                 "eta0", "intercept", "loss", "p", "k", "max_passes"):
        assert f"default: {defaults[name]}" in help_text, name


def test_every_option_reaches_the_estimator():
    est = build_estimator(parse_train(
        "--loss", "smooth_hinge", "--p", "1.5", "--sigma", "0.01", "--T", "500", "--k", "3",
        "--B", "auto", "--iterate", "average", "--sampling", "cyclic", "--t-offset", "5",
        "--intercept-scaling", "0.3", "--class-weight", "balanced", "--jobs", "2",
        "--seed", "7", "--epsilon", "0.5", "--no-intercept", "--l1", "0.002"))
    assert est.get_params() == PGSClassifier(
        loss="smooth_hinge", p=1.5, sigma=0.01, T=500, k=3, B="auto", iterate="average",
        sampling="cyclic", t_offset=5.0, intercept_scaling=0.3, class_weight="balanced",
        n_jobs=2, random_state=7, epsilon=0.5, fit_intercept=False, l1=0.002).get_params()
    est = build_estimator(parse_train("--sigma", "auto", "--t-offset", "auto",
                                      "--intercept-scaling", "auto", "--B", "2"))
    assert (est.sigma, est.t_offset, est.intercept_scaling, est.B) == ("auto", "auto",
                                                                       "auto", 2.0)


def _estimator_accepts_sigma_auto():
    try:
        PGSClassifier(sigma="auto")._check_params()
    except (TypeError, ValueError):
        return False
    return True


@pytest.mark.skipif(not _estimator_accepts_sigma_auto(),
                    reason="the estimators do not take sigma='auto' yet")
def test_sigma_auto(data, tmp_path, run_here):
    res = run_here("train", data / "train.svm", "--sigma", "auto", "--seed", "0",
                   "--model-out", tmp_path / "m.npz")
    assert res.returncode == 0, res.stderr
    est = PGSClassifier(sigma="auto", random_state=0)
    X, y = pgs.load_svmlight(data / "train.svm")
    est.fit(X, y)
    assert f"sigma chosen {est.sigma_:g}" in res.stdout
    model = pgs.load_model(tmp_path / "m.npz")
    assert model.coef.tobytes() == est.coef_[0].tobytes()


# ----------------------------------------------------------------------- every problem

def test_binary_train_predict_eval_round_trip(data, tmp_path):
    model_path = tmp_path / "m.npz"
    res = run("train", data / "train.svm", "--test", data / "test.svm", "--loss", "logistic",
              "--p", "1.8", "--sigma", "1e-3", "--k", "2", "--seed", "5", "--model-out",
              model_path)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    for word in ("2,400 rows", "non-zeros", "PGSClassifier (2 classes)", "trained in",
                 "train: accuracy", "test:  accuracy", "objective", "seed 5",
                 f"model saved to {model_path}"):
        assert word in out, out
    assert res.stderr == ""  # not a terminal: no progress line

    # The saved model is the estimator fitted with the same arguments.
    X, y, Xt, yt = pgs.load_svmlight_files([data / "train.svm", data / "test.svm"])
    est = PGSClassifier(loss="logistic", p=1.8, sigma=1e-3, k=2, random_state=5).fit(X, y)
    model = pgs.load_model(model_path)
    assert isinstance(model, pgs.Model)
    assert model.coef.tobytes() == est.coef_[0].tobytes()
    assert model.intercept == est.intercept_[0]
    accuracy = np.mean(est.predict(Xt) == yt)
    assert f"test:  accuracy {accuracy:.4f}" in out

    pred_path = tmp_path / "pred.txt"
    res = run("predict", model_path, data / "test.svm", "--out", pred_path)
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(np.loadtxt(pred_path), est.predict(Xt))
    res = run("predict", model_path, data / "test.svm")  # to stdout
    assert res.stdout == pred_path.read_text()

    res = run("eval", model_path, data / "test.svm")
    assert res.returncode == 0, res.stderr
    assert f"accuracy {accuracy:.4f}" in res.stdout


def test_class_weighted_binary_model_reports_no_unweighted_objective(data, tmp_path, run_here):
    """train and eval agree: a class-weighted model's objective is not the saved model's
    unweighted one, so neither prints it (eval reads class_weight from the model's params)."""
    model_path = tmp_path / "m.npz"
    res = run_here("train", data / "train.svm", "--sigma", "1e-3", "--seed", "1",
                   "--class-weight", "balanced", "--model-out", model_path)
    assert res.returncode == 0 and "accuracy" in res.stdout and "objective" not in res.stdout
    assert pgs.load_model(model_path).params["class_weight"] == "balanced"
    res = run_here("eval", model_path, data / "test.svm")
    assert res.returncode == 0 and "accuracy" in res.stdout and "objective" not in res.stdout


def _proba_lines(text):
    lines = text.strip().splitlines()
    header = lines[0].split()
    rows = np.array([line.split() for line in lines[1:]], dtype=np.float64)
    return header, rows[:, 0], rows[:, 1:]


def test_binary_proba(data, tmp_path, run_here):
    model_path = tmp_path / "m.npz"
    res = run_here("train", data / "train.svm", "--loss", "logistic", "--seed", "2",
                   "--model-out", model_path)
    assert res.returncode == 0, res.stderr
    res = run_here("predict", model_path, data / "test.svm", "--proba")
    assert res.returncode == 0, res.stderr
    X, y, Xt, _ = pgs.load_svmlight_files([data / "train.svm", data / "test.svm"])
    est = PGSClassifier(loss="logistic", random_state=2).fit(X, y)
    header, labels, proba = _proba_lines(res.stdout)
    assert header == ["labels", "-1", "1"]
    np.testing.assert_array_equal(labels, est.predict(Xt))
    np.testing.assert_allclose(proba, est.predict_proba(Xt), rtol=1e-5, atol=1e-12)


def test_multiclass_default_loss_is_chosen_and_reported(data, tmp_path, run_here):
    """Without --loss, the classifier's "auto": the loss the search chose is reported, and
    the saved model is the estimator's, bit for bit."""
    model_path = tmp_path / "m.npz"
    res = run_here("train", data / "multi.svm", "--seed", "3", "--model-out", model_path)
    assert res.returncode == 0, res.stderr
    X, y = pgs.load_svmlight(data / "multi.svm")
    est = PGSClassifier(random_state=3).fit(X, y)
    assert "(3 classes, one-vs-rest or one problem of K outputs, chosen)" in res.stdout
    assert f"loss chosen {est.loss_}" in res.stdout
    model = pgs.load_model(model_path)
    assert model.params["loss"] == est.loss_
    np.testing.assert_array_equal(model.predict(X), est.predict(X))


def test_multiclass_round_trip(data, tmp_path, run_here):
    model_path = tmp_path / "m.npz"
    res = run_here("train", data / "multi.svm", "--loss", "modified_huber", "--seed", "3",
                   "--jobs", "2", "--class-weight", "balanced", "--iterate", "average",
                   "--model-out", model_path)
    assert res.returncode == 0, res.stderr
    assert "PGSClassifier (3 classes, one-vs-rest)" in res.stdout
    X, y = pgs.load_svmlight(data / "multi.svm")
    est = PGSClassifier(loss="modified_huber", random_state=3, class_weight="balanced",
                        iterate="average").fit(X, y)          # n_jobs does not change bits
    model = pgs.load_model(model_path)
    assert type(model).__name__ == "OneVsRestModel"
    assert model.coef.tobytes() == est.coef_.tobytes()
    np.testing.assert_array_equal(model.classes, est.classes_)
    assert f"train: accuracy {est.score(X, y):.4f}" in res.stdout

    res = run_here("predict", model_path, data / "multi.svm", "--proba")
    assert res.returncode == 0, res.stderr
    header, labels, proba = _proba_lines(res.stdout)
    assert header == ["labels", "1", "2", "3"]
    np.testing.assert_array_equal(labels, est.predict(X))
    np.testing.assert_allclose(proba, est.predict_proba(X), rtol=1e-5, atol=1e-12)

    res = run_here("eval", model_path, data / "multi.svm")
    assert res.returncode == 0, res.stderr
    assert f"accuracy {est.score(X, y):.4f}" in res.stdout


def test_multiclass_without_options_uses_the_classifier(data, tmp_path):
    res = run("train", data / "multi.svm", "--seed", "1", "--model-out", tmp_path / "m.npz")
    assert res.returncode == 0, res.stderr
    X, y = pgs.load_svmlight(data / "multi.svm")
    est = PGSClassifier(random_state=1).fit(X, y)
    assert pgs.load_model(tmp_path / "m.npz").coef.tobytes() == est.coef_.tobytes()
    res = run("predict", tmp_path / "m.npz", data / "multi.svm")
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(np.array(res.stdout.split(), dtype=float), est.predict(X))


@pytest.mark.parametrize("loss", ["squared", "huber"])
def test_regression_reports_rmse_and_r2(data, tmp_path, run_here, loss):
    model_path = tmp_path / "r.npz"
    res = run_here("train", data / "reg.svm", "--loss", loss, "--seed", "0",
                   "--model-out", model_path)
    assert res.returncode == 0, res.stderr
    assert "PGSRegressor (regression)" in res.stdout
    X, y = pgs.load_svmlight(data / "reg.svm")
    est = PGSRegressor(loss=loss, random_state=0).fit(X, y)
    pred = est.predict(X)
    rmse = np.sqrt(np.mean((pred - y) ** 2))
    assert f"train: RMSE {rmse:.4f}, R^2 {est.score(X, y):.4f}" in res.stdout
    model = pgs.load_model(model_path)
    assert model.coef.tobytes() == est.coef_.tobytes()
    res = run_here("eval", model_path, data / "reg.svm")
    assert f"RMSE {rmse:.4f}, R^2 {est.score(X, y):.4f}" in res.stdout
    res = run_here("predict", model_path, data / "reg.svm")
    np.testing.assert_allclose(np.array(res.stdout.split(), dtype=float), pred, rtol=1e-15)


@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals")
def test_progress_on_a_terminal(data, tmp_path):
    import pty

    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pgs", "train", str(data / "train.svm"), "--T", "8000000",
             "--model-out", str(tmp_path / "m.npz")],
            stdout=subprocess.PIPE, stderr=slave, text=True, cwd=NEUTRAL_CWD)
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=120)
        proc.stdout.close()
    finally:
        os.close(master)
    shown = b"".join(chunks).decode()
    assert proc.returncode == 0
    assert f"training {data / 'train.svm'}: " in shown and " s" in shown
    # sigma="auto"'s progress: its last halving rung, its scores and the time left
    assert " s left: sigma rung of " in shown


# ----------------------------------------------------------------------- the error contract

@pytest.fixture(scope="module")
def damaged(data, tmp_path_factory):
    """Damaged inputs: a bad line, a truncated .gz, a corrupt .xz, damaged model files."""
    d = tmp_path_factory.mktemp("damaged")
    (d / "bad.svm").write_text("1 1:1\n-1 2:x\n")
    raw = (data / "train.svm").read_bytes()
    (d / "cut.svm.gz").write_bytes(gzip.compress(raw)[:3000])
    xz = bytearray(lzma.compress(raw))
    xz[len(xz) // 2] ^= 0xFF
    (d / "flip.svm.xz").write_bytes(bytes(xz))
    X, y = pgs.load_svmlight(data / "train.svm")
    pgs.train(X, y, T=100, seed=0).save(d / "good.npz")
    model = (d / "good.npz").read_bytes()
    (d / "cut.npz").write_bytes(model[: len(model) // 2])
    flipped = bytearray(model)
    flipped[len(flipped) // 3] ^= 0xFF
    (d / "flip.npz").write_bytes(bytes(flipped))
    (d / "one_class.svm").write_text("1 1:1\n1 2:1\n")
    return d


@pytest.mark.parametrize("args,pattern", [
    (["train", "{d}/bad.svm"], "bad.svm, line 2, column 4: invalid feature value"),
    (["train", "{d}/cut.svm.gz"], "cut.svm.gz"),
    (["info", "{d}/flip.svm.xz"], "flip.svm.xz"),
    (["eval", "{d}/cut.npz", "{train}"], "cut.npz"),
    (["predict", "{d}/flip.npz", "{train}"], "flip.npz"),
    (["predict", "{train}", "{train}"], "not a pgs model"),
    (["train", "{d}/missing.svm"], "missing.svm: No such file or directory"),
    (["eval", "{d}/missing.npz", "{train}"], "missing.npz: No such file or directory"),
    (["train", "{train}", "--sigma", "-1"], "argument --sigma"),
    (["train", "{train}", "--model-out", "{d}/no/such/dir/m.npz"], "does not exist"),
])
def test_file_and_argument_errors_through_a_subprocess(data, damaged, args, pattern):
    args = [a.format(d=damaged, train=data / "train.svm") for a in args]
    one_error_line(run(*args), pattern)


@pytest.mark.parametrize("args,pattern", [
    (["train", "{train}", "--sigma", "x"], "argument --sigma: must be a positive number"),
    (["train", "{train}", "--loss", "nope"], "invalid choice"),
    (["train", "{train}", "--p", "3"], "argument --p: must be a number in (1, 2]"),
    (["train", "{train}", "--T", "0"], "argument --T: must be an integer >= 1"),
    (["train", "{train}", "--jobs", "0"], "argument --jobs: must be a non-zero integer"),
    (["train", "{train}", "--t-offset", "-1"], "argument --t-offset"),
    (["train", "{train}", "--intercept-scaling", "0"], "argument --intercept-scaling"),
    (["train", "{train}", "--sampling", "sometimes"], "argument --sampling"),
    (["train", "{train}", "--iterate", "best"], "argument --iterate"),
    (["train", "{train}", "--seed", "-3"], "argument --seed"),
    (["train", "{reg}", "--loss", "huber", "--class-weight", "balanced"], "--class-weight"),
    (["train", "{reg}"], "real-valued targets"),
    (["train", "{d}/one_class.svm"], "at least 2 classes"),
    (["train", "{train}", "--loss", "smooth_hinge", "--epsilon", "0"], "epsilon"),
    (["train"], "required"),
    (["frobnicate"], "invalid choice"),
    (["predict", "{d}/good.npz", "{train}", "--proba"], "probabilistic loss"),
])
def test_argument_errors_exit_2_with_one_line(data, damaged, args, pattern, run_here, tmp_path,
                                              monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = [a.format(d=damaged, train=data / "train.svm", reg=data / "reg.svm") for a in args]
    one_error_line(run_here(*args), pattern)


def test_predict_with_too_many_features(data, tmp_path, run_here):
    res = run_here("train", data / "train.svm", "--T", "100", "--model-out",
                   tmp_path / "m.npz")
    assert res.returncode == 0
    wide = tmp_path / "wide.svm"
    wide.write_text("1 1:1 5000:2\n")
    one_error_line(run_here("predict", tmp_path / "m.npz", wide), "n_features")


@pytest.mark.parametrize("sigma", ["0.1", "auto"])
def test_huge_max_passes_is_one_line_naming_it(data, run_here, sigma):
    """--max-passes 1e300 ran without end at a fixed sigma; now an error naming it."""
    one_error_line(run_here("train", data / "train.svm", "--sigma", sigma, "--max-passes",
                            "1e300"), "max_passes=1e+300 makes")


def test_debug_shows_the_traceback(damaged):
    res = run("train", damaged / "bad.svm", "--debug")
    assert res.returncode == 2
    assert "Traceback" in res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("pgs: error: ")


def test_failed_training_leaves_the_model_file_untouched(data, damaged, tmp_path, run_here):
    model_path = tmp_path / "m.npz"
    model_path.write_bytes((damaged / "good.npz").read_bytes())
    before = model_path.read_bytes()
    for data_path in (damaged / "one_class.svm", damaged / "bad.svm", damaged / "cut.svm.gz"):
        res = run_here("train", data_path, "--model-out", model_path)
        assert res.returncode == 2
    assert model_path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.npz"]   # no temporary file left


def _default_sigint():
    """In the child: SIGINT as under an interactive shell, whatever this process inherited
    (Python installs its handler over SIG_DFL only; the mask is inherited too)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_ctrl_c_exits_130_with_one_line_and_keeps_the_model(data, damaged, tmp_path):
    model_path = tmp_path / "m.npz"
    model_path.write_bytes((damaged / "good.npz").read_bytes())
    before = model_path.read_bytes()
    # 4e9 iterations take minutes: the signal comes well inside the fit.
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgs", "train", str(data / "train.svm"), "--T", "4000000000",
         "--model-out", str(model_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_default_sigint, cwd=NEUTRAL_CWD)
    try:
        for line in proc.stdout:
            if line.startswith("training"):
                break
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        start = time.perf_counter()
        rc = proc.wait(timeout=30)
        took = time.perf_counter() - start
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert rc == 130
    assert took < 2.0       # the wait for the exit, not the training
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("pgs train: interrupted after ")
    assert lines[0].endswith(f" s of training; no model saved; {model_path} left as it was")
    assert model_path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.npz"]
