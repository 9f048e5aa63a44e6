"""Downstream Cython code can cimport pgs's C-level API (as scipy/special/tests/test_extending).

A tiny extension is written and compiled in a temporary directory with Cython's cythonize and
setuptools. It cimports the inline loss layer (`pgs._losses`), the PRNG (`pgs._random`), the
kernel's public entry point (`pgs._core`: pgs_init, pgs_state_init, pgs_sampler_init,
pgs_run_f64_i64, pgs_dual: the loop pgs's own solver runs) and the dual vector (`pgs._dual`,
which includes the installed C header `_powers.h`), and drives the solver over CSR buffers and
state arrays it allocates itself; the results are compared with the Python layer.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import numpy as np
import paper
import pytest
import scipy.sparse as sp

import pgs
from pgs._core import py_loss

PXD_FILES = ("_core.pxd", "_dual.pxd", "_losses.pxd", "_random.pxd", "_powers.h", "_portable.h")

PYX = '''
# cython: language_level=3, boundscheck=False, wraparound=False
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport calloc, free
import numpy as np

cimport pgs._losses as L
from pgs._core cimport (
    PGSParams, PGSState, PGSOutput, PGSSampler, SAMPLE_IID, SAMPLE_CYCLIC, pgs_init,
    pgs_state_init,
    pgs_sampler_init, pgs_run_f64_i64, pgs_dual,
)
from pgs._random cimport xoshiro_bounded
cimport pgs._dual as D


def loss_and_dloss(int loss_id, double z, double y, double eps):
    cdef double v
    cdef double d = L.loss_at(loss_id, z, y, eps, &v)
    # (the value only where asked: the same derivative without it)
    assert L.loss_at(loss_id, z, y, eps, NULL) == d and L.loss_value(loss_id, z, y, eps) == v
    return v, d


def named_losses(double z, double y):
    cdef double h, lg
    cdef double dh = L.hinge(z, y, 0.0, &h)
    cdef double dlg = L.logistic(z, y, 0.0, &lg)
    return h, dh, lg, dlg


def bounded_draws(uint64_t n, int count):
    cdef uint64_t s[4]
    s[0] = 1; s[1] = 2; s[2] = 3; s[3] = 4
    return [xoshiro_bounded(s, n) for _ in range(count)]


def dual_kinds():
    return [D.dual_kind(p) for p in (2.0, 1.5, 1.7)], [D.P_TWO, D.P_Q3, D.P_GENERAL]


def dual_powers(double[::1] a, double e):
    out = [0.0] * a.shape[0]
    cdef double r[1]
    cdef Py_ssize_t i
    D.pgs_powers_init()
    for i in range(a.shape[0]):
        D.dual_powers(D.P_GENERAL, e, &a[i], r, 1)
        out[i] = r[0]
    return out


def dual_p2_add_dot(double[::1] lam, const double[::1] data, const int32_t[::1] indices,
                    double g):
    """p = 2, no average: lam += g x for the row (data, indices), then <x, u>."""
    cdef D.DualVector dv
    dv.lam = dv.u = &lam[0]
    dv.stride = 1
    dv.wsum = dv.clast = NULL
    dv.n = lam.shape[0]
    dv.kind = D.P_TWO
    dv.S = dv.inv_S = 1.0
    dv.Q = dv.Q_comp = dv.Q_abs = 0.0
    dv.n_updates = 0
    D.dual_add(&dv, &data[0], &indices[0], 0, data.shape[0], g, 0.0)
    return D.dual_dot(&dv, &data[0], &indices[0], 0, data.shape[0], 0.0, 0, 0), dv.Q


def run_last(int loss_id, const double[::1] data, const int64_t[::1] indices,
             const int64_t[::1] indptr, const double[::1] y, Py_ssize_t n_features,
             double p, double sigma, double B, double icpt, double eps, Py_ssize_t k,
             long long T, bint cyclic=False):
    """T iterations over caller-owned buffers, rows i.i.d. from the seed 1, 2, 3, 4 or in
    their order (`cyclic`): (status, w_T, maintained Q, exact Q, t). u: lam itself for
    p = 2, none for p = 1.5, its own array for other p (pgs/_core.pxd)."""
    cdef PGSParams prm
    cdef PGSState st
    cdef PGSOutput out
    cdef PGSSampler smp
    cdef D.DualVector dv
    cdef Py_ssize_t n_cols = n_features + 1
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef int status
    cdef uint64_t seed[4]
    cdef double* lam = <double*>calloc(n_cols, sizeof(double))
    cdef double* u = (lam if p == 2.0 else NULL if p == 1.5
                      else <double*>calloc(n_cols, sizeof(double)))
    w = np.zeros(n_cols)
    cdef double[::1] wv = w
    seed[0] = 1; seed[1] = 2; seed[2] = 3; seed[3] = 4
    pgs_init(&prm, p, sigma, B, icpt, eps, k, 0, 0, n_cols)
    pgs_state_init(&st, &prm, 1, &out, lam, u, <int64_t*>calloc(k, sizeof(int64_t)),
                   <double*>calloc(k, sizeof(double)), seed, n_cols)
    pgs_sampler_init(&smp, SAMPLE_CYCLIC if cyclic else SAMPLE_IID)
    try:
        with nogil:
            status = pgs_run_f64_i64(loss_id, &data[0], &indices[0], &indptr[0], &y[0],
                                     n_rows, n_cols, &prm, &st, T, &smp)
            pgs_dual(&dv, &prm, &st, n_cols, 0)
            D.dual_write_w(&dv, &wv[0])
        return status, w, out.Q + out.Q_comp, D.dual_exact_Q(&dv), st.t
    finally:
        free(st.coefs)
        free(st.rows)
        if st.u != st.lam:
            free(st.u)
        free(st.lam)
'''

SETUP = '''
import sys
from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    name="pgs_downstream",
    ext_modules=cythonize([Extension("pgs_downstream", ["pgs_downstream.pyx"])],
                          include_path=[sys.argv.pop(1)]),
    script_args=["build_ext", "--inplace"],
)
'''


def _c_compiler():
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) or shutil.which("cc") or shutil.which("gcc")


def _pxd_root():
    """The directory holding the `pgs` package whose .pxd files Cython must find."""
    return Path(pgs.__file__).resolve().parent.parent


def test_pxd_files_ship_with_the_package():
    pkg = Path(pgs.__file__).resolve().parent
    for name in PXD_FILES:
        assert (pkg / name).is_file(), f"{name} is not installed next to {pgs.__file__}"
    meson_build = Path(__file__).resolve().parents[1] / "pgs" / "meson.build"
    if not meson_build.exists():
        pytest.skip("not running from a source tree: pgs/meson.build is absent")
    text = meson_build.read_text()
    block = re.search(r"install_sources\((.*?)\)", text, re.S)
    assert block is not None
    for name in PXD_FILES:
        assert f"'{name}'" in block.group(1), f"{name} missing from install_sources"


@pytest.fixture(scope="module")
def downstream(tmp_path_factory):
    if _c_compiler() is None:
        pytest.skip("no C compiler found: cannot build a downstream Cython extension")
    pytest.importorskip("Cython")
    pytest.importorskip("setuptools")
    tmp = tmp_path_factory.mktemp("pgs_extending")
    (tmp / "pgs_downstream.pyx").write_text(textwrap.dedent(PYX))
    (tmp / "setup.py").write_text(textwrap.dedent(SETUP))
    env = dict(os.environ, CFLAGS="-O0")        # an unoptimised build compiles 5x faster
    proc = subprocess.run([sys.executable, "setup.py", str(_pxd_root())], cwd=tmp, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    built = list(tmp.glob("pgs_downstream*" + sysconfig.get_config_var("EXT_SUFFIX")))
    assert len(built) == 1, list(tmp.iterdir())
    spec = importlib.util.spec_from_file_location("pgs_downstream", built[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_downstream_losses(downstream):
    for loss_id, name in enumerate(pgs.LOSS_NAMES):
        for z in (-3.0, -1.0, -0.2, 0.0, 0.7, 1.0, 2.5, 1e300, -1e300):
            for y in (-1.0, 1.0, 0.4):
                eps = 0.5
                v, d = downstream.loss_and_dloss(loss_id, z, y, eps)
                assert v == py_loss(loss_id, z, y, eps), (name, z, y)
                assert d == py_loss(loss_id, z, y, eps, deriv=True), (name, z, y)
    h, dh, lg, dlg = downstream.named_losses(0.25, -1.0)
    assert h == 1.25 and dh == 1.0
    assert lg == py_loss(pgs.LOSS_NAMES.index("logistic"), 0.25, -1.0, 0.0)
    assert dlg == py_loss(pgs.LOSS_NAMES.index("logistic"), 0.25, -1.0, 0.0, deriv=True)


def test_downstream_dual_vector(downstream):
    from pgs._core import powers
    kinds, expected = downstream.dual_kinds()
    assert kinds == expected
    a = np.array([0.0, 1e-300, 3e-9, 0.25, 1.0, 7.5, 1e12])
    # (to rounding: the downstream build may take the AVX2 powers where pgs was built
    # without them, -Dsimd=disabled)
    np.testing.assert_allclose(downstream.dual_powers(a, 1.25), powers(a, 1.25),
                               rtol=1e-14, atol=0)
    lam = np.zeros(5)
    x, cols = np.array([0.5, -2.0]), np.array([1, 3], dtype=np.int32)
    dot, Q = downstream.dual_p2_add_dot(lam, x, cols, 3.0)
    np.testing.assert_array_equal(lam, [0.0, 1.5, 0.0, -6.0, 0.0])
    assert dot == 3.0 * (0.25 + 4.0) and Q == 1.5 ** 2 + 6.0 ** 2


def test_downstream_prng(downstream):
    draws = downstream.bounded_draws(7, 2000)
    assert min(draws) == 0 and max(draws) == 6
    assert downstream.bounded_draws(7, 50) == draws[:50]          # a pure function of state


@pytest.mark.parametrize("loss, p, B, fit_intercept", [
    ("hinge", 2.0, None, False),
    ("logistic", 1.5, None, True),
    ("squared", 1.8, "auto", True),
    ("huber", 1.25, 0.4, False),
])
def test_downstream_kernel_matches_python(downstream, loss, p, B, fit_intercept):
    rng = np.random.default_rng(0)
    X = sp.random(25, 6, density=0.4, random_state=1, format="csr")
    y = np.where(rng.random(25) < 0.5, -1.0, 1.0) if loss in ("hinge", "logistic") \
        else X @ np.arange(6.0) + rng.standard_normal(25)
    T, k = 80, 3
    rows = rng.integers(0, 25, T * k)
    model = paper.on_rows(X, y, rows, loss=loss, p=p, sigma=0.1, T=T, k=k, B=B,
                          iterate="last", fit_intercept=fit_intercept, seed=0)
    B_used = model.params["B"] if model.params["B"] is not None else 0.0
    A = paper.rows_of(X, rows)
    status, w, Q, exact_Q, t = downstream.run_last(
        pgs.LOSS_NAMES.index(loss), A.data, A.indices.astype(np.int64),
        A.indptr.astype(np.int64), y[rows], 6, p, 0.1, B_used, 1.0 if fit_intercept else 0.0,
        model.params["epsilon"], k, T, True)
    assert status == 0 and t == T
    np.testing.assert_allclose(w, model.full_weights(), rtol=1e-13, atol=0)
    assert Q == pytest.approx(exact_Q, rel=1e-12)


@pytest.mark.parametrize("p", [2.0, 1.5, 1.7])
def test_downstream_iid_run_is_the_solvers(downstream, p):
    """Rows drawn i.i.d. from the same PRNG words: the downstream call and the Solver (which
    `pgs.train` runs) take the same rows and reach the same iterate."""
    from pgs.engine.solver import Solver
    X = sp.random(40, 7, density=0.3, random_state=3, format="csr")
    y = np.where(np.random.default_rng(1).random(40) < 0.5, -1.0, 1.0)
    indices, indptr, T, k = X.indices.astype(np.int64), X.indptr.astype(np.int64), 150, 2
    core = Solver(7, pgs.LOSS_NAMES.index("logistic"), p, 0.05, 0.0, 1.0, 0.0, k, 0,
                  False, np.array([1, 2, 3, 4], dtype=np.uint64))
    assert core.run(T, X.data, indices, indptr, y) == 0
    w = core.last()
    status, w_down, Q, exact_Q, t = downstream.run_last(
        core.loss_id, X.data, indices, indptr, y, 7, p, 0.05, 0.0, 1.0, 0.0, k, T)
    assert status == 0 and t == T and np.count_nonzero(w) > 4
    np.testing.assert_allclose(w_down, w, rtol=1e-13, atol=0)
    assert Q == pytest.approx(core.Q, rel=1e-12)


def test_downstream_kernel_reports_errors_as_status(downstream):
    X = sp.random(5, 3, density=0.6, random_state=2, format="csr")
    args = (X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64), np.ones(5), 3, 2.0,
            0.1, 0.0, 1.0, 0.0, 1, 2)
    nan = X.data.copy()
    nan[0] = np.nan
    assert downstream.run_last(0, nan, *args[1:], True)[0] == 1      # PGS_NONFINITE
    assert downstream.run_last(len(pgs.LOSS_NAMES), *args)[0] == -1
