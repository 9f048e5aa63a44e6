"""The `pgs` command line, end to end through subprocesses."""

import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import pgs
from pgs._cli import main
from pgs._demo import make_sparse_classification

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
    return d


def test_no_arguments_shows_help_pointing_to_demo():
    res = run()
    assert res.returncode == 0
    assert "usage: pgs" in res.stdout and "pgs demo" in res.stdout


def test_demo():
    res = run("demo")
    assert res.returncode == 0, res.stderr
    assert "test accuracy" in res.stdout


def test_train_predict_eval(data, tmp_path):
    model_path = tmp_path / "m.npz"
    res = run("train", data / "train.svm", "--test", data / "test.svm", "--loss", "logistic",
              "--p", "1.8", "--sigma", "1e-3", "--k", "2", "--seed", "5", "--model-out",
              model_path)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    for word in ("2,400 rows", "non-zeros", "trained in", "train: accuracy", "test:  accuracy",
                 "objective", f"model saved to {model_path}"):
        assert word in out, out
    assert res.stderr == ""  # not a terminal: no progress line

    # The saved model is the one the library trains with the same arguments.
    X, y, Xt, yt = pgs.load_svmlight_files([data / "train.svm", data / "test.svm"])
    ref = pgs.train(X, y, loss="logistic", p=1.8, sigma=1e-3, k=2, seed=5)
    model = pgs.load_model(model_path)
    assert model.coef.tobytes() == ref.coef.tobytes()
    assert f"test:  accuracy {np.mean(ref.predict(Xt) == yt):.4f}" in out

    pred_path = tmp_path / "pred.txt"
    res = run("predict", model_path, data / "test.svm", "--out", pred_path)
    assert res.returncode == 0, res.stderr
    pred = np.loadtxt(pred_path)
    np.testing.assert_array_equal(pred, ref.predict(Xt))
    res = run("predict", model_path, data / "test.svm")  # to stdout
    assert res.stdout == pred_path.read_text()

    res = run("eval", model_path, data / "test.svm")
    assert res.returncode == 0, res.stderr
    assert f"accuracy {np.mean(ref.predict(Xt) == yt):.4f}" in res.stdout


def test_train_regression_reports_rmse(data, tmp_path, run_here):
    res = run_here("train", data / "train.svm", "--loss", "squared", "--T", "5000", "--seed", "0",
              "--model-out", tmp_path / "r.npz")
    assert res.returncode == 0, res.stderr
    assert "train: RMSE" in res.stdout


def test_quiet_and_default_model_path(data, tmp_path, run_here, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = run_here("train", data / "train.svm", "--quiet", "--T", "1000")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "" and res.stderr == ""
    assert (tmp_path / "train.svm.model.npz").exists()


def test_info(data, run_here):
    res = run_here("info", data / "train.svm")
    assert res.returncode == 0, res.stderr
    assert "2,400 rows" in res.stdout and "labels: -1" in res.stdout


def test_errors_exit_2_through_a_subprocess(tmp_path):
    res = run("train", tmp_path / "missing.svm")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"pgs: error: {tmp_path / 'missing.svm'}: No such file or directory"]


@pytest.mark.parametrize("args,pattern", [
    (["train", "missing.svm"], "missing.svm: No such file"),
    (["train", "{bad}"], "line 2, column 4: invalid feature value"),
    (["train", "{train}", "--sigma", "-1"], "--sigma"),
    (["train", "{train}", "--loss", "nope"], "invalid choice"),
    (["train", "{train}", "--p", "3"], "p must be in"),
    (["train"], "required"),
    (["predict", "{train}", "{train}"], "not a pgs model"),
    (["frobnicate"], "invalid choice"),
])
def test_errors_exit_2_with_one_line(data, tmp_path, args, pattern, run_here, monkeypatch):
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:1\n-1 2:x\n")
    args = [a.format(bad=bad, train=data / "train.svm") for a in args]
    monkeypatch.chdir(tmp_path)
    res = run_here(*args)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert pattern in lines[0]
    assert "Traceback" not in res.stderr


def test_predict_with_too_many_features(data, tmp_path, run_here):
    res = run_here("train", data / "train.svm", "--T", "100", "--model-out",
                   tmp_path / "m.npz")
    assert res.returncode == 0
    wide = tmp_path / "wide.svm"
    wide.write_text("1 1:1 5000:2\n")
    res = run_here("predict", tmp_path / "m.npz", wide)
    assert res.returncode == 2 and "n_features" in res.stderr


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_ctrl_c_stops_training(data, tmp_path):
    model_path = tmp_path / "never.npz"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgs", "train", str(data / "train.svm"), "--T", "4000000000",
         "--model-out", str(model_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_default_sigint, cwd=NEUTRAL_CWD)
    try:
        for line in proc.stdout:
            if line.startswith("training:"):
                break
        time.sleep(0.5)  # well inside the run (4e9 iterations take minutes)
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
    assert took < 10
    assert "interrupted at iteration" in err and "of 4,000,000,000" in err
    assert "Traceback" not in err
    assert not model_path.exists()


@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals")
def test_progress_on_a_terminal(data, tmp_path):
    import pty

    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pgs", "train", str(data / "train.svm"), "--T", "3000000",
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
        proc.wait(timeout=60)
        proc.stdout.close()
    finally:
        os.close(master)
    shown = b"".join(chunks).decode()
    assert proc.returncode == 0
    assert "it/s" in shown and "ETA" in shown and "objective ~" in shown
    assert "/3,000,000" in shown
