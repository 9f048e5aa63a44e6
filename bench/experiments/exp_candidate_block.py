"""What a block of the sigma search's candidates could save: C binary problems on one
block against the same C problems in lock-step (each its own vectors, turns of 256 rows),
as the search runs its candidates now.

The C problems are copies of one binary problem at one sigma (1e-4), so each output moves
as the others do, as candidates at nearby sigmas mostly do; candidates at different sigmas
would also need per-output steps, which this leaves out: an upper bound on the gain.
`pgs.training.fit.fit_many` of two passes, hinge, with `BLOCK_MIN_OUTPUTS` lowered to 2
(a block) or raised past C (lock-step); the same bits either way (checked). Sets: MNIST
parity and R8's first class against the rest (real), news20-like text (130k features) and
the 10-class RCV1-like set's first class (200k rows). Seconds, best of 3 alternated fits.
"""

import hashlib
import time

import numpy as np
import scipy.sparse as sp

import pgs.rules.defaults as D
from bench.experiments.exp_defaults import _news20_like
from bench.harness.common import markdown_table, write_report
from bench.harness.data import mnist_parity, r8, rcv1_like_multiclass
from pgs.training.fit import fit_many


def _sets(quick):
    s = mnist_parity()
    r = r8()
    Xn, yn = _news20_like(2_000 if quick else 11_314)
    Xr, yr = rcv1_like_multiclass(20_000 if quick else 200_000)
    first = [np.where(y == np.unique(y)[0], 1.0, -1.0) for y in (r.y_train, yn, yr)]
    return [("MNIST parity (real)", s.X_train, s.y_train), ("R8 (real), class 1", r.X_train,
                                                             first[0]),
            ("news20-like, class 1", Xn, first[1]), ("RCV1-like, class 1", Xr, first[2])]


def _fit(X, y, C, iterate, min_outputs):
    D.BLOCK_MIN_OUTPUTS = min_outputs
    t0 = time.perf_counter()
    models = fit_many(X, [y] * C, loss="hinge", sigma=1e-4, T=2 * X.shape[0], seed=0,
                      iterate=iterate)
    seconds = time.perf_counter() - t0
    return seconds, hashlib.sha256(b"".join(m.coef.tobytes() for m in models)).hexdigest()


def run(cfg):
    """Run the experiment, write results/candidate_block.md; return the path."""
    default, rows = D.BLOCK_MIN_OUTPUTS, []
    try:
        for name, X, y in _sets(cfg.quick):
            X = sp.csr_matrix(X)
            for C, iterate in ((4, "average"), (7, "average"), (7, "last")):
                times, bits = {"block": [], "lock-step": []}, set()
                for _ in range(3):
                    for mode, k in (("block", 2), ("lock-step", 10**9)):
                        seconds, digest = _fit(X, y, C, iterate, k)
                        times[mode].append(seconds)
                        bits.add(digest)
                if len(bits) != 1:
                    raise AssertionError(f"{name}: the layouts' models differ")
                b, ls = min(times["block"]), min(times["lock-step"])
                rows.append([name, C, iterate, f"{b:.3f}", f"{ls:.3f}", f"{b / ls:.2f}"])
                print(rows[-1], flush=True)
    finally:
        D.BLOCK_MIN_OUTPUTS = default
    table = markdown_table(["set", "candidates C", "iterate", "one block (s)", "lock-step (s)",
                            "block / lock-step"], rows)
    intro = __doc__.split("\n\n", 1)[1].replace("\n", " ")
    return write_report("candidate_block", "The sigma search's candidates as one block: "
                        "an upper bound", [("Two passes, hinge", table)], cfg, intro)
