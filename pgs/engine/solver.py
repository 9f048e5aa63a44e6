"""A PGS run's life cycle over the compiled state (`pgs._core.SolverCore`): runs to a
given iteration, the iterates, and the state handed out and restored (chunked, resumed
and warm-started runs equal an unsplit run bit for bit)."""

import time
from typing import NamedTuple

import numpy as np

from pgs._core import OUTPUT_SCALARS, SAMPLING_MODES, SolverCore, run_solver
from pgs.rules.data import entry_problem
from pgs.rules.defaults import default_callback_every
from pgs.rules.losses import loss_spec
from pgs.rules.parameters import SCHEDULES

_ARRAYS = ("lam", "u", "wsum", "clast", "w_pick", "perm", "paid")


class Solver(SolverCore):
    """The resumable state of one PGS run of R >= 1 outputs (running to T1, then to T2
    equals running to T2): a binary problem or a regression (R = 1), a K-output loss's
    classes (docs/design.md 6d) or R binary problems over the same rows, which share t,
    the rows drawn and the PRNG (docs/design.md 6f).

    Arguments: `pgs._core.SolverCore`'s, in order (B <= 0: unbounded, icpt 0: no column,
    t_pick 0: none, icpt_rate > 0: a free bias; ids index ``LOSS_NAMES``, ``SAMPLING_MODES``
    and ``SCHEDULES``; `n_out` R, `block` the feature-major layout); `solver_of` makes one
    of a resolved `pgs.rules.params.Params`. Iterates are of shape (n_features + 1,), or
    (R, n_features + 1); the state is one dict (`get_state`).
    """

    def __init__(self, *args, **kwargs):
        self._workers = None     # the parallel engines' workers' sampler states (W > 1)
        self._finished = False   # `finish`: no run until set_state
        self._consumed = False   # `take`: the state is gone
        self._handed = False     # `get_state(copy=False)`: its buffers are the caller's

    def run(self, t_end, data, indices, indptr, y, sample_weight=None):
        """Advance to iteration `t_end` over the CSR buffers; a status code (0: ok). `y`
        has a row for each row of X, read where it lies: a vector (any stride), or for R
        binary problems an (n_rows, R) array of contiguous rows. `sample_weight` must be
        the same object on every chunk."""
        y = np.asarray(y)
        self._ready(indptr, sample_weight)
        return run_solver(self, y[:, None] if y.ndim == 1 else y, data, indices, indptr,
                          t_end)

    def _ready(self, indptr, sample_weight):
        """Check that the solver may run over the rows of `indptr`; set its sampler up."""
        n_rows = indptr.shape[0] - 1
        self._check_runnable()
        if n_rows < 1:
            raise ValueError("no rows")
        if sample_weight is not None and sample_weight.shape[0] != n_rows:
            raise ValueError("sample_weight and indptr disagree on the number of rows")
        self._prepare_sampler(n_rows, sample_weight)

    def _new(self):
        """An iterate's array, and its (n_cols, R) view (`_iterate_to`'s columns)."""
        out = np.empty((self.n_out, self.n_cols))
        return (out[0] if self.n_out == 1 else out), out.T

    def last(self):
        """w_t of the current iteration, as a new array (with l1 > 0: of `sparse_lam`)."""
        self._check_state()
        if self.l1 > 0.0:
            return self._sparse_last()
        out, columns = self._new()
        self._iterate_to(columns, False)
        return out

    def average(self):
        """The mean of w_1 .. w_t (O(n); leaves the state untouched, so a resumed run
        folds exactly as an unsplit one); with l1 > 0 zero wherever `last` is (p < 2: at p = 2
        a fit with l1 returns the last iterate, docs/sparse.md)."""
        self._check_state()
        self._check_which("average")
        out, columns = self._new()
        self._iterate_to(columns, True)
        if self.l1 > 0.0:
            out[self._sparse_last() == 0.0] = 0.0
        return out

    def sparse_lam(self):
        """lam as the l1 term leaves it, as a new array: every feature's lam_j truncated
        towards 0 by U (p = 2: dual averaging) or by what it owes, U - paid_j (p < 2); the
        constant column never. lam itself without l1."""
        lam = np.array(self.lam)
        if self.l1 > 0.0:
            owed = self._scalars()["U"] - (0.0 if self.paid is None else self.paid[:-1])
            feat = lam[:-1]
            feat[...] = np.copysign(np.maximum(np.abs(feat) - owed, 0.0), feat)
        return lam

    def _sparse_last(self):
        """w_t of `sparse_lam`: the kernel's scale and projection of the truncated lam, its
        q-norm over every coordinate's truncated value (the kernel's margins count the
        untouched ones' owed truncation only when a row reads them: docs/sparse.md)."""
        out, columns = self._new()
        self._write_w_of(self.sparse_lam(), columns)
        return out

    def restart(self, lam, state):
        """`set_state` of a merged state (lam alone: u, S, Q and c rebuilt) on a new
        solver, whose average and picked iterate are still zero: a parallel round's start."""
        self.perm = None if state["perm"] is None else state["perm"].copy()
        self._set_scalars(state)
        self.set_lam(lam, state["t"])

    def finish(self):
        """End the run: the state and iterates can still be read, `run` refuses until
        `set_state`."""
        self._finished = True

    def take(self, which):
        """The iterate `which` ("last", "average" or "pick") computed in one of the solver's
        buffers (no memory on top of the state, which it consumes until `set_state`; to
        keep it: `finish`, `iterate(which)`, `get_state(copy=False)`): (n_cols,), or for R
        outputs (R, n_cols), each output's row contiguous; a block (feature-major): one new
        array."""
        self._check_state()
        self._check_which(which)
        if self._handed:
            raise RuntimeError("get_state(copy=False) handed the solver's buffers over as "
                               "a state: take() would overwrite it (use iterate())")
        # (l1 > 0, or a block, whose outputs' rows are strided: O(n) more)
        w = self.iterate(which) if self.l1 > 0.0 or self.block else None
        self.finish()
        self._consumed = True
        if w is not None:
            return w
        if which == "pick":
            return self.w_pick
        if which == "last":
            if self.u is not self.lam:       # (p < 2: u is a strided view, or not kept)
                w, columns = self._new()
                self._iterate_to(columns, False)
                return w
            w = np.multiply(self.u, self.scale, out=self.u)
        else:
            w = self.wsum if self.clast is None else self.clast
            self._iterate_to(w if w.ndim == 2 else w[:, None], True)
        return w if w.ndim == 1 else w.T     # (R outputs: their rows)

    def iterate(self, which):
        """The iterate `which` ("last", "average" or "pick") as a new array."""
        self._check_state()
        self._check_which(which)
        if which == "pick":
            return self.w_pick.copy()
        return self.last() if which == "last" else self.average()

    def _check_which(self, which):
        if which == "pick":
            if self.w_pick is None:
                raise ValueError("this solver keeps no picked iterate")
        elif which == "average":
            if self.wsum is None:
                raise ValueError("this solver does not keep the average")
        elif which != "last":
            raise ValueError(f"which must be 'last', 'average' or 'pick', got {which!r}")

    def _check_state(self):
        if self._consumed:
            raise RuntimeError("the solver's state was consumed by take(); restore it "
                               "with set_state()")

    def _check_runnable(self):
        self._check_state()
        if self._finished:
            raise RuntimeError("the solver was finished (finish(), take() or "
                               "get_state(copy=False)); restore it with set_state() "
                               "to run it again")

    def get_state(self, copy=True):
        """A dict of copies of everything needed to resume (`set_state`): what the outputs
        share, each output's scalars (arrays of R for R > 1) and the vectors (shape
        (n_features + 1, R) for R > 1; w_pick (R, n_features + 1)); with ``copy=False``
        the solver's own buffers, handed over (it is then finished)."""
        self._check_state()
        state = self._scalars()
        for name in _ARRAYS:
            arr = getattr(self, name)
            state[name] = None if arr is None else arr.copy() if copy else arr
        if self.u is self.lam:
            state["u"] = None          # (p = 2: u is lam, one copy is enough)
        state["workers"] = self._workers
        if not copy:
            self.finish()
            self._handed = True
        return state

    def set_state(self, state):
        """Resume from `get_state()` of a solver built with the same arguments (or the
        per-class states of a K-output run of pgs before one state held them), or from the
        parallel engines' merged state (lam without "Q": u, S, Q and c rebuilt)."""
        state = stacked(state["outputs"], state) if "outputs" in state else state
        if np.shape(state["lam"]) != self.lam.shape:
            raise ValueError(f"the state's lam has shape {np.shape(state['lam'])}, this "
                             f"solver's {self.lam.shape} (another number of features or "
                             f"outputs)")
        if (state["wsum"] is None) != (self.wsum is None):
            raise ValueError("the state and this solver disagree on keeping the average")
        if (state["clast"] is None) != (self.clast is None):
            # (one vector for p >= 1.2, spans below: see pgs/_dual.pxd)
            raise ValueError("the state keeps its average in another form than this "
                             "solver (a state of another version of pgs, or another p)")
        rebuild = "Q" not in state      # lam alone: u, S, Q and c rebuilt from it
        self._workers = state.get("workers")
        self.lam[...] = state["lam"]
        if self.u is not None and self.u is not self.lam and not rebuild:
            self.u[...] = state["u"]
        if self.wsum is not None:
            self.wsum[...] = state["wsum"]
        if self.clast is not None:
            self.clast[...] = state["clast"]
        if state["w_pick"] is not None:
            self.w_pick = np.array(state["w_pick"], dtype=np.float64)
        if self.paid is not None:
            # (a state of l1 = 0 or p = 2: nothing owed; the engines' merge: set_lam's)
            self.paid[...] = 0.0 if state.get("paid") is None else state["paid"]
        self.perm = None if state["perm"] is None else state["perm"].copy()
        self._finished = self._consumed = self._handed = False
        self._bind()
        self._set_scalars(state)
        if rebuild:
            self.set_lam(state["lam"], state["t"])


def stacked(states, shared=None):
    """One state of R outputs from R states of one output each (`Solver.get_state`'s, or
    merged ones of lam alone): their vectors side by side (w_pick stacked as rows), their
    own scalars as arrays of R, what they share first one's (or `shared`'s: t_pick,
    loss_sum, workers). A K-output run's state of pgs before one state held them was such
    a list, under "outputs"."""
    first = dict(states[0])
    for key in ("lam", "u", "wsum", "clast", "paid"):
        if first.get(key) is not None:
            first[key] = np.stack([one[key] for one in states], axis=-1)
    if first.get("w_pick") is not None:
        first["w_pick"] = np.stack([one["w_pick"] for one in states])
    for key in OUTPUT_SCALARS:
        if key in first:
            first[key] = np.array([one[key] for one in states])
    for key in ("t_pick", "loss_sum", "workers"):
        if shared is not None and key in shared:
            first[key] = shared[key]
    return first


def output_state(state, r):
    """Output r's state of one output (what `stacked` takes) from a state of R outputs: its
    vectors are views of the state's (a block's outputs' models hold no copy)."""
    one = dict(state)
    for key in ("lam", "u", "wsum", "clast", "paid"):
        if one.get(key) is not None:
            one[key] = one[key][:, r]
    if one.get("w_pick") is not None:
        one["w_pick"] = one["w_pick"][r]
    for key in OUTPUT_SCALARS:
        if key in one:
            one[key] = one[key][r].item()
    return one


def solver_of(params, n_features, rng_state, t_pick=0, track_loss=False, t_offset=None,
              n_out=1, block=False):
    """A `Solver` of the resolved `params` (`pgs.rules.params.Params`) over `n_features`
    features: its PRNG state `rng_state` (4 uint64), the iteration whose iterate it keeps
    (`t_pick`, 0: none), `track_loss`, for a worker of the paper's schedule its own
    `t_offset`, and `n_out` outputs (feature-major if `block`: docs/multiclass.md)."""
    return Solver(n_features, loss_spec(params.loss).id, params.p, params.sigma,
                  params.B if params.B is not None else 0.0, params.icpt, params.epsilon,
                  params.k, t_pick, params.iterate == "average", rng_state,
                  SAMPLING_MODES.index(params.sampling), track_loss,
                  params.t_offset if t_offset is None else t_offset,
                  SCHEDULES.index(params.schedule), params.eta0 or 0.0, params.intercept_rate,
                  params.l1, n_out, block)


#: The kernel's status codes (`PGSStatus` in pgs/_core.pxd; tests/test_layout.py checks
#: the two agree) and what each means.
STATUS = {
    1: "a margin or the iterate became infinite or NaN",
    3: "the sampler is missing a buffer (internal error)",
    4: "out of memory for the outputs' scratch",
}


class Progress(NamedTuple):
    """What a `train` callback receives, every `callback_every` iterations.

    Attributes
    ----------
    t : int
        Iterations done (counting those of a warm start's earlier runs).
    T : int
        Iterations the run will do in all.
    seconds : float
        Wall-clock seconds since this call of `train` started.
    loss_estimate : float
        Mean (weighted) loss of the rows sampled since the previous report, each at
        the iterate before its update (a progressive-validation estimate).
    objective_estimate : float
        ``sigma * ||w_t||_p^2 / (2 (p - 1)) + loss_estimate``.
    """

    t: int
    T: int
    seconds: float
    loss_estimate: float
    objective_estimate: float


class Reports:
    """A run's callback reports (`Progress`), for every engine: at the first step done at
    or after each `every` iterations (None: `default_callback_every`) from `t0`, and at
    the end; `stopped` once the callback returned False before the end."""

    def __init__(self, run, t0, callback, every, start):
        self.run, self.callback, self.start, self.stopped = run, callback, start, False
        self.every = every or default_callback_every(run.t_total - t0)
        self.next = run.t_total if callback is None else t0 + self.every
        self.loss, self.rows = 0.0, 0

    def add(self, t, loss_sum, rows, norm_w):
        """Account for the steps up to t (`rows` rows sampled lost `loss_sum`; ``norm_w()``
        gives ||w_t||_p); False when the callback stops the run."""
        if self.callback is None:
            return True
        self.loss, self.rows = self.loss + loss_sum, self.rows + rows
        if t < self.next and t < self.run.t_total:
            return True
        prm = self.run.params
        loss = self.loss / self.rows if self.rows else float("nan")
        reg = prm.sigma * norm_w() ** 2 / (2.0 * (prm.p - 1.0))
        report = Progress(t, self.run.t_total, time.perf_counter() - self.start, loss, reg + loss)
        self.next, self.loss, self.rows = t + self.every, 0.0, 0
        if self.callback(report) is False:
            self.stopped = t < self.run.t_total
            return False
        return True


class DivergedError(FloatingPointError, ValueError):
    """The iterate overflowed (a ValueError too: arguments set too large a scale)."""


def raise_status(status, solver, Xb, params):
    """Raise the error a non-zero kernel status stands for (naming a bad entry of X)."""
    if status == 1:
        problem = entry_problem(Xb)
        if problem is not None:
            raise ValueError(problem)
    msg = STATUS.get(status, f"solver failed with status {status}")
    if status == 4:
        raise MemoryError(msg)
    if status != 1:
        raise ValueError(msg)
    raise DivergedError(f"{msg} at iteration {solver.t + 1}: X's values, sample_weight, "
                        f"intercept_scaling={params.intercept_scaling!r} and 1/sigma "
                        f"(sigma={params.sigma!r}) set its scale; rescale X or bound "
                        f"the domain with B")
