"""A PGS run's life cycle over the compiled state (`pgs._core.SolverCore`): runs to a
given iteration, the iterates, and the state handed out and restored (chunked, resumed
and warm-started runs equal an unsplit run bit for bit)."""

import time
from typing import NamedTuple

import numpy as np

from pgs._core import SAMPLING_MODES, SolverCore, _iterates_block, _lockstep
from pgs.rules.data import entry_problem
from pgs.rules.defaults import default_callback_every
from pgs.rules.losses import loss_spec
from pgs.rules.parameters import SCHEDULES

_ARRAYS = ("lam", "u", "wsum", "clast", "w_pick", "perm", "paid")


class Solver(SolverCore):
    """The resumable state of one PGS run (running to T1, then to T2 equals running to T2).

    Arguments: `pgs._core.SolverCore`'s, in order (B <= 0: unbounded, icpt 0: no column,
    t_pick 0: none, icpt_rate > 0: a free bias; ids index ``LOSS_NAMES``, ``SAMPLING_MODES``
    and ``SCHEDULES``); `solver_of` makes one of a resolved `pgs.rules.params.Params`.
    """

    def __init__(self, *args, **kwargs):
        self.head = None         # a block's output c > 0: output 0 (no cycle: it holds none)
        self._workers = None     # the parallel engines' workers' sampler states (W > 1)
        self._finished = False   # `finish`: no run until set_state
        self._consumed = False   # `take`: the state is gone
        self._handed = False     # `get_state(copy=False)`: its buffers are the caller's

    def run(self, t_end, data, indices, indptr, y, sample_weight=None):
        """Advance to iteration `t_end` over the CSR buffers; a status code (0: ok).
        `sample_weight` must be the same object on every chunk."""
        return run_lockstep([self], t_end, max(t_end, 1), data, indices, indptr, [y],
                            sample_weight)[1]

    def _ready(self, indptr, sample_weight):
        """Check that the solver may run over the rows of `indptr`; set its sampler up."""
        n_rows = indptr.shape[0] - 1
        self._check_runnable()
        if n_rows < 1:
            raise ValueError("no rows")
        if sample_weight is not None and sample_weight.shape[0] != n_rows:
            raise ValueError("sample_weight and indptr disagree on the number of rows")
        self._prepare_sampler(n_rows, sample_weight)

    def last(self):
        """w_t of the current iteration, as a new array of length n_features + 1 (with
        l1 > 0: of `sparse_lam`)."""
        self._check_state()
        if self.l1 > 0.0:
            return self._sparse_last()
        out = np.empty(self.n_cols)
        self._write_w(out)
        return out

    def average(self):
        """The mean of w_1 .. w_t (O(n); leaves the state untouched, so a resumed run
        folds exactly as an unsplit one); with l1 > 0 zero wherever `last` is (p < 2: at p = 2
        a fit with l1 returns the last iterate, docs/sparse.md)."""
        self._check_state()
        self._check_which("average")
        out = np.empty(self.n_cols)
        self._average_to(out)
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
            feat[:] = np.copysign(np.maximum(np.abs(feat) - owed, 0.0), feat)
        return lam

    def _sparse_last(self):
        """w_t of `sparse_lam`: the kernel's scale and projection of the truncated lam, its
        q-norm over every coordinate's truncated value (the kernel's margins count the
        untouched ones' owed truncation only when a row reads them: docs/sparse.md)."""
        out = np.empty(self.n_cols)
        self._write_w_of(self.sparse_lam(), out)
        return out

    def restart(self, lam, state):
        """`set_state` of a merged state (lam alone: u, S, Q and c rebuilt) on a new
        solver, whose average and picked iterate are still zero: a parallel round's start;
        lam None: as it is (a block's, written for every output at once, `MultiSolver.block`)."""
        self.perm = None if state["perm"] is None else state["perm"].copy()
        self._set_scalars(state)
        self.set_lam(lam, state["t"])

    @property
    def outputs(self):
        """The run's outputs' solvers: this one (a `MultiSolver`'s: its classes')."""
        return (self,)

    def finish(self):
        """End the run: the state and iterates can still be read, `run` refuses until
        `set_state`."""
        self._finished = True

    def take(self, which):
        """The iterate `which` ("last", "average" or "pick") computed in one of the solver's
        buffers (no memory on top of the state, which it consumes until `set_state`; to
        keep it: `finish`, `iterate(which)`, `get_state(copy=False)`)."""
        self._check_state()
        self._check_which(which)
        if self._handed:
            raise RuntimeError("get_state(copy=False) handed the solver's buffers over as "
                               "a state: take() would overwrite it (use iterate())")
        # (l1 > 0, or a block's output: O(n) more)
        w = self.iterate(which) if self.l1 > 0.0 or self.n_out > 1 else None
        self.finish()
        self._consumed = True
        if w is not None:
            return w
        if which == "pick":
            return self.w_pick
        if which == "last":
            if self.u is not self.lam:
                w = np.empty(self.n_cols)    # (p < 2: u is a strided view, or not kept)
                self._write_w(w)
                return w
            np.multiply(self.u, self.scale, out=self.u)
            return self.u
        w = self.wsum if self.clast is None else self.clast
        self._average_to(w)
        return w

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
        """A dict of copies of everything needed to resume (`set_state`); with
        ``copy=False`` the solver's own buffers, handed over (it is then finished)."""
        self._check_state()
        state = self._scalars()
        for name in _ARRAYS:
            # (a block's outputs draw output 0's rows: its permutation is theirs, and a
            # one-vs-rest problem's state goes on alone as a warm start)
            owner = self if name != "perm" or self.head is None else self.head
            arr = getattr(owner, name)
            state[name] = None if arr is None else arr.copy() if copy else arr
        if self.u is self.lam:
            state["u"] = None          # (p = 2: u is lam, one copy is enough)
        state["workers"] = self._workers
        if not copy:
            self.finish()
            self._handed = True
        return state

    def set_state(self, state):
        """Resume from `get_state()` of a solver built with the same arguments, or from the
        parallel engines' merged state (lam without "Q": u, S, Q and c rebuilt)."""
        if state["lam"].shape[0] != self.n_cols:
            raise ValueError("the state belongs to a different number of features")
        if (state["wsum"] is None) != (self.wsum is None):
            raise ValueError("the state and this solver disagree on keeping the average")
        if (state["clast"] is None) != (self.clast is None):
            # (one vector for p >= 1.2, spans below: see pgs/_dual.pxd)
            raise ValueError("the state keeps its average in another form than this "
                             "solver (a state of another version of pgs, or another p)")
        rebuild = "Q" not in state      # lam alone: u, S, Q and c rebuilt from it
        self._workers = state.get("workers")
        self.lam[:] = state["lam"]
        if self.u is not None and self.u is not self.lam and not rebuild:
            self.u[:] = state["u"]
        if self.wsum is not None:
            self.wsum[:] = state["wsum"]
        if self.clast is not None:
            self.clast[:] = state["clast"]
        if state["w_pick"] is not None:
            self.w_pick = state["w_pick"].copy()
        if self.paid is not None:
            # (a state of l1 = 0 or p = 2: nothing owed; the engines' merge: set_lam's)
            self.paid[:] = 0.0 if state.get("paid") is None else state["paid"]
        self.perm = None if state["perm"] is None else state["perm"].copy()
        self._finished = self._consumed = self._handed = False
        self._bind()
        self._set_scalars(state)
        if rebuild:
            self.set_lam(state["lam"], state["t"])


def solver_of(params, n_features, rng_state, t_pick=0, track_loss=False, t_offset=None,
              n_out=1, block=True):
    """A `Solver` of the resolved `params` (`pgs.rules.params.Params`) over `n_features`
    features: its PRNG state `rng_state` (4 uint64), the iteration whose iterate it keeps
    (`t_pick`, 0: none), `track_loss` and, for a worker of the paper's schedule, its own
    `t_offset`; with ``n_out > 1`` a `MultiSolver` of that many outputs, on one block or
    (not `block`: a state the kernel does not run, or runs rarely) each with its own
    vectors, whose per-output O(n) work (states, iterates) reads no strided views."""
    args = (n_features, loss_spec(params.loss).id, params.p, params.sigma,
            params.B if params.B is not None else 0.0, params.icpt, params.epsilon,
            params.k, t_pick, params.iterate == "average", rng_state,
            SAMPLING_MODES.index(params.sampling), track_loss,
            params.t_offset if t_offset is None else t_offset,
            SCHEDULES.index(params.schedule), params.eta0 or 0.0, params.intercept_rate,
            params.l1, n_out)
    if n_out == 1 or not block:
        return Solver(*args[:-1]) if n_out == 1 else MultiSolver(
            [Solver(*args[:-1]) for _ in range(n_out)])
    first = Solver(*args)       # (output 0 allocates the block, the others view it)
    multi = MultiSolver([first] + [Solver(*args, c, first) for c in range(1, n_out)])
    for s in multi.outputs[1:]:
        s.head = first
    return multi


class MultiSolver:
    """The resumable state of a K-output run (loss "multinomial", "crammer_singer";
    docs/design.md 6d): one `Solver` per class, built alike (`solver_of`), each its class's
    dual vector in one block that keeps each feature's K coordinates adjacent, run
    together by the kernel's one loop (all K margins of a row before any update). They
    share t, the rows drawn and the PRNG; `Solver`'s methods act on every class, the
    iterates come as (K, n_features + 1) arrays and the state as one dict per class."""

    def __init__(self, solvers):
        self.outputs = list(solvers)

    # What the classes share is class 0's (the kernel copies it to the others).
    t = property(lambda self: self.outputs[0].t, doc="Iterations done.")
    k = property(lambda self: self.outputs[0].k, doc="Rows a batch.")
    consumed = property(lambda self: self.outputs[0].consumed, doc="Rows drawn.")
    loss_sum = property(lambda self: self.outputs[0].loss_sum,
                        doc="The sampled loss (summed in class 0 by the K-output losses).")

    @property
    def norm_w(self):
        """The regulariser's norm over the classes, (sum_c ||w_c||_p^2)^(1/2)."""
        return float(np.sqrt(sum(s.norm_w ** 2 for s in self.outputs)))

    run = Solver.run      # (the K classes at once)

    def block(self, name):
        """The classes' vector `name` ("lam", "wsum", "clast" or "paid") as one
        (n_features + 1, K) view of their block (class c's coordinate j at [j, c]; lam for
        p < 2 but 1.5: a strided view, u interleaved)."""
        first = self.outputs[0]
        if first.n_out != len(self.outputs):
            raise ValueError("the classes do not share a block")
        return getattr(first, name).base.reshape(first.n_cols, first.n_out, -1)[:, :, -1]

    def iterate(self, which):
        """The iterate `which` of every class, shape (K, n_features + 1): one new array
        on top of the state, taken in one pass over the classes' vectors (`iterates`)."""
        out = np.empty((len(self.outputs), self.outputs[0].n_cols))
        iterates(self.outputs, which, out.T)
        return out

    def take(self, which):
        """The iterate `which` of every class, shape (K, n_features + 1): one new array on
        top of the block (the solvers' state is consumed, as `Solver.take`)."""
        out = self.iterate(which)
        for s in self.outputs:
            s.finish()
            s._consumed = True
        return out

    def finish(self):
        for s in self.outputs:
            s.finish()

    def set_t_pick(self, t_pick):
        for s in self.outputs:
            s.set_t_pick(t_pick)

    def _scalars(self):
        return [s._scalars() for s in self.outputs]

    def get_state(self, copy=True):
        """The classes' `Solver.get_state` under "outputs" (t, t_pick and which iterates
        are kept, class 0's, beside them)."""
        states = [s.get_state(copy) for s in self.outputs]
        for one in states[1:]:
            one["perm"] = None      # (the classes draw class 0's rows: `set_state`)
        return {"outputs": states, **{key: states[0][key] for key in (
            "t", "t_pick", "wsum", "w_pick", "zs", "loss_sum", "workers")}}

    def set_state(self, state):
        """Resume from `get_state()` of a multi-solver of the same classes and arguments."""
        outputs = state.get("outputs")
        if outputs is None or len(outputs) != len(self.outputs):
            raise ValueError(f"the state is not that of {len(self.outputs)} classes")
        for c, (s, one) in enumerate(zip(self.outputs, outputs, strict=True)):
            # (the parallel engines' merged state keeps the workers' samplers beside them;
            # the classes draw class 0's rows: the others keep no permutation)
            s.set_state(dict(one, perm=one["perm"] if c == 0 else None,
                             **({"workers": state["workers"]} if "workers" in state else {})))


def iterates(outputs, which, out=None):
    """The iterate `which` of each of `outputs` (`Solver`s) as the columns of `out` (None:
    a new (n_features + 1, K) array): "last" and "average" in one pass over their vectors
    (`pgs._core._iterates_block`: a block's read once, not in K strided passes); "pick",
    or l1 > 0, output by output."""
    if out is None:
        out = np.empty((outputs[0].n_cols, len(outputs)))
    if which == "pick" or outputs[0].l1 > 0.0:
        for c, s in enumerate(outputs):
            out[:, c] = s.iterate(which)
        return out
    for s in outputs:
        s._check_state()
        s._check_which(which)
    _iterates_block(list(outputs), out, which == "average")
    return out


def run_lockstep(solvers, t_end, block, data, indices, indptr, ys, sample_weight=None):
    """Advance several solvers over the same X to `t_end` in lock-step, `block` iterations
    each in turn, so that solvers drawing the same rows (sharing a seed) fetch each row
    once; each bit-identical to its own `run` (a `MultiSolver`'s K classes run as one
    problem). A y is read where it lies: a vector (any stride), or for K binary problems
    an (n_rows, K) array whose rows are contiguous. (first failed solver, its status) or
    (-1, 0).
    """
    if len(ys) != len(solvers):
        raise ValueError(f"{len(solvers)} solvers but {len(ys)} target arrays")
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    solvers = [tuple(s.outputs) if len(s.outputs) > 1 else s for s in solvers]
    ys = [y[:, None] if y.ndim == 1 else y for y in map(np.asarray, ys)]
    for s in solvers:
        # (K outputs draw their rows with output 0's sampler: the others need none, no
        # permutation or alias table of their own)
        first, *others = s if isinstance(s, tuple) else [s]
        first._ready(indptr, sample_weight)
        for one in others:
            one._check_runnable()
    return _lockstep(solvers, ys, data, indices, indptr, t_end, block)


#: The kernel's status codes (`PGSStatus` in pgs/_core.pxd; tests/test_layout.py checks
#: the two agree) and what each means.
STATUS = {
    1: "a margin or the iterate became infinite or NaN",
    3: "the sampler is missing a buffer (internal error)",
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
    if status != 1:
        raise ValueError(msg)
    raise DivergedError(f"{msg} at iteration {solver.t + 1}: X's values, sample_weight, "
                        f"intercept_scaling={params.intercept_scaling!r} and 1/sigma "
                        f"(sigma={params.sigma!r}) set its scale; rescale X or bound "
                        f"the domain with B")
