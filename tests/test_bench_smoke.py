"""Smoke test of the benchmarks: the data generator, and bench/'s imports resolve
(bench/ is not part of the package)."""

import ast
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("scipy")

BENCH = Path(__file__).resolve().parents[1] / "bench"
if not (BENCH / "harness" / "data.py").exists():
    pytest.skip("run from a checkout (bench/ is not in the sdist)", allow_module_level=True)


def _load_bench_data():
    """bench/harness/data.py loaded from its file: putting the checkout on sys.path would
    make `import pgs` find the source tree instead of the installed package."""
    path = BENCH / "harness" / "data.py"
    spec = importlib.util.spec_from_file_location("bench.harness.data", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench.harness.data"] = module
    spec.loader.exec_module(module)
    return module


D = _load_bench_data()
LABEL_NOISE, generate_rcv1_like, toy_gaussians = (
    D.LABEL_NOISE, D.generate_rcv1_like, D.toy_gaussians)


@pytest.fixture(scope="module")
def small():
    return generate_rcv1_like(n_train=20_000, n_test=2_000, seed=3)


def test_rcv1_like_statistics(small):
    X = small.X_train
    assert X.shape == (20_000, 47_236)
    nnz_per_row = np.diff(X.indptr)
    assert 70 <= nnz_per_row.mean() <= 82  # RCV1 has ~76 distinct words a document
    assert nnz_per_row.min() >= 1
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms, 1.0, rtol=1e-12)
    assert (X.data > 0).all()
    assert set(np.unique(small.y_train)) == {-1.0, 1.0}
    assert 0.40 <= (small.y_train > 0).mean() <= 0.54
    assert small.X_test.shape == (2_000, 47_236) and small.X_val.shape == (2_000, 47_236)


def test_rcv1_like_is_deterministic(small):
    again = generate_rcv1_like(n_train=20_000, n_test=2_000, seed=3)
    assert (again.X_train != small.X_train).nnz == 0
    np.testing.assert_array_equal(again.y_test, small.y_test)


def test_rcv1_like_label_noise_rate(monkeypatch):
    # Regenerate with the noise switched off: the flipped share is the noise rate.
    noisy = generate_rcv1_like(n_train=20_000, n_test=200, seed=4)
    monkeypatch.setattr(D, "LABEL_NOISE", 0.0)
    clean = generate_rcv1_like(n_train=20_000, n_test=200, seed=4)
    flipped = np.mean(noisy.y_train != clean.y_train)
    assert abs(flipped - LABEL_NOISE) < 0.006  # 3.5 sd of a binomial share at n = 20,000


def test_rcv1_like_multiclass():
    X, y = D.rcv1_like_multiclass(5_000, 10, seed=2)
    assert X.shape == (5_000, 47_236) and 70 <= X.nnz / 5_000 <= 82
    assert y.dtype == np.int64 and set(np.unique(y)) == set(range(10))
    X2, y2 = D.rcv1_like_multiclass(5_000, 10, seed=2)
    assert (X2 != X).nnz == 0
    np.testing.assert_array_equal(y2, y)
    # A class's topic words make it findable: each row's best class by the mean of the
    # class's rows (nearest centroid, in-sample) agrees with the label far above chance.
    centroids = np.vstack([np.asarray(X[y == k].mean(axis=0)) for k in range(10)])
    agree = np.mean(np.argmax(np.asarray(X @ centroids.T), axis=1) == y)
    assert agree > 0.6


def test_toy_gaussians_optimal_direction():
    toy = toy_gaussians(10, m=20_000)
    assert toy.X.shape == (20_000, 10)
    np.testing.assert_allclose(np.linalg.norm(toy.w_star), 1.0)
    # The Bayes direction classifies far better than chance on its own data.
    acc = np.mean(np.sign(toy.X @ toy.w_star) == toy.y)
    assert acc > 0.8


def test_hard_labels_are_deterministic_and_balanced(small):
    a = D.hard_labels(small, seed=0)
    b = D.hard_labels(small, seed=0)
    for ya, yb, X in zip(a, b, (small.X_train, small.X_test, small.X_val), strict=True):
        np.testing.assert_array_equal(ya, yb)
        assert ya.shape == (X.shape[0],) and set(np.unique(ya)) == {-1.0, 1.0}
    assert 0.40 < np.mean(a[0] > 0) < 0.54        # ~47% positive, as CCAT
    assert not np.array_equal(a[0], small.y_train)  # new labels on the same rows


def _top_level_names(path):
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _registry():
    """run.py's EXPERIMENTS (name -> module), read, not imported."""
    return ast.literal_eval(next(
        n.value for n in ast.parse((BENCH / "run.py").read_text()).body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "EXPERIMENTS"))


def test_bench_imports_resolve():
    """Every `from bench... import name` in bench/ names a file and what it defines, and
    run.py's registry names existing modules with a run(cfg) (read, not imported)."""
    root = BENCH.parent
    for path in sorted(BENCH.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.module
                    and node.module.split(".")[0] == "bench"):
                continue
            target = root.joinpath(*node.module.split("."))
            for alias in node.names:
                if (target / f"{alias.name}.py").exists():
                    continue  # a submodule
                assert target.with_suffix(".py").exists(), (path, node.module)
                assert alias.name in _top_level_names(target.with_suffix(".py")), (
                    path, node.module, alias.name)
    registry = _registry()
    for module in registry.values():
        file = root.joinpath(*module.split(".")).with_suffix(".py")
        assert file.exists(), module
        assert "run" in _top_level_names(file), module


def test_bench_readme_links_exist():
    """Every results file and script bench/README.md names is in the tree."""
    text = (BENCH / "README.md").read_text()
    named = set(re.findall(r"\((results/[\w.-]+)\)", text))
    named |= set(re.findall(r"\b((?:experiments|micro|harness)/[\w]+\.py)\b", text))
    assert named
    for rel in sorted(named):
        assert (BENCH / rel).exists(), rel


def test_bench_readme_lists_every_experiment():
    """Every experiment of run.py's registry has its row in bench/README.md's table,
    with its script (the results column says whether a result is committed)."""
    text = (BENCH / "README.md").read_text()
    registry = _registry()
    for name, module in registry.items():
        script = "/".join(module.split(".")[1:]) + ".py"
        assert f"| {name} | {script} |" in text, name
