"""One-vs-rest on 2 threads, hinge and its kin: each thread's classes on one block against
the same problems in lock-step (docs/multiclass.md).

`PGSClassifier(loss=..., n_jobs=2, random_state=0)` with every other default (sigma
"auto"), the same fit twice: with `BLOCK_MIN_OUTPUTS` as it is (a thread's slice of 8 or
more classes on one block) and raised past every K (each problem its own vectors, the
slice in lock-step). Sets whose slices reach 8 classes on 2 threads: news20-like (20
classes x 130k features, `exp_defaults._news20_like`), letter (real, 26 classes) and the
RCV1-like generator with 20 classes. Seconds, median of 3 alternated fits; both layouts
give the same coef bits (checked).
"""

import hashlib
import time

import numpy as np

import pgs
import pgs.rules.defaults as D
from bench.experiments.exp_defaults import _news20_like
from bench.harness.common import markdown_table, write_report
from bench.harness.data import letter, rcv1_like_multiclass

CONFIGS = (("hinge", "average"), ("hinge", "last"), ("squared_hinge", "average"),
           ("modified_huber", "average"))


def _sets(quick):
    m = 2_000 if quick else 11_314
    X, y = _news20_like(m)
    s = letter()
    Xr, yr = rcv1_like_multiclass(20_000 if quick else 100_000, n_classes=20)
    return [("news20-like, 20 classes", X, y), ("letter (real), 26 classes", s.X_train,
                                                  s.y_train),
            ("RCV1-like, 20 classes", Xr, yr)]


def _fit(X, y, loss, iterate, min_outputs):
    D.BLOCK_MIN_OUTPUTS = min_outputs
    t0 = time.perf_counter()
    est = pgs.PGSClassifier(loss=loss, iterate=iterate, n_jobs=2, random_state=0).fit(X, y)
    seconds = time.perf_counter() - t0
    return seconds, hashlib.sha256(est.coef_.tobytes() + est.intercept_.tobytes()).hexdigest()


def run(cfg):
    """Run the experiment, write results/thread_ovr_blocks.md; return the path."""
    default, rows = D.BLOCK_MIN_OUTPUTS, []
    try:
        for name, X, y in _sets(cfg.quick):
            for loss, iterate in CONFIGS:
                times, bits = {"block": [], "lock-step": []}, set()
                for _ in range(3):
                    for mode, k in (("block", default), ("lock-step", 10**9)):
                        seconds, digest = _fit(X, y, loss, iterate, k)
                        times[mode].append(seconds)
                        bits.add(digest)
                if len(bits) != 1:
                    raise AssertionError(f"{name} {loss}: the layouts' models differ")
                b, ls = np.median(times["block"]), np.median(times["lock-step"])
                rows.append([name, loss, iterate, f"{b:.3f}", f"{ls:.3f}", f"{b / ls:.2f}"])
                print(rows[-1], flush=True)
    finally:
        D.BLOCK_MIN_OUTPUTS = default
    table = markdown_table(["set", "loss", "iterate", "a block a thread (s)",
                            "lock-step (s)", "block / lock-step"], rows)
    intro = __doc__.split("\n\n", 1)[1].replace("\n", " ")
    return write_report("thread_ovr_blocks", "One-vs-rest on 2 threads: a block a thread "
                        "against lock-step", [("Default fits", table)], cfg, intro)
