"""Experiment: from how many outputs a block pays (`pgs.training.fit.BLOCK_MIN_OUTPUTS`).

One pass at sigma = 1e-4 (the average kept) over the rows of the first K classes, K = 2 …
20: multinomial on a block against its classes' own vectors (`prepare(block=...)`), and
one-vs-rest logistic and hinge on a block against their problems in lock-step
(`fit_many`); the two arms in turn, `REPEATS` rounds, the ratio block / apart of each
round (medians [min-max]). Sets: MNIST and R8 (real), news20-like text. Run from the
repository root: ``python bench/experiments/exp_block_outputs.py``.
"""

import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.append(str(Path(__file__).resolve().parents[2]))
import pgs.training.fit as F  # noqa: E402
from bench.experiments.exp_defaults import _news20_like  # noqa: E402
from bench.harness.common import Config, fmt, markdown_table, write_report  # noqa: E402
from bench.harness.data import mnist, r8  # noqa: E402

REPEATS = 3
KS = (2, 3, 5, 8, 10, 20)


def _sets():
    split = r8()
    yield "MNIST (real)", *mnist()[:2]
    yield "R8 (real)", split.X_train, split.y_train
    yield "news20-like", *_news20_like(18_846)


def _arm(X, y, K, model, block):
    """Seconds of one pass of `model` over the rows of y's first K classes."""
    keep = np.isin(y, np.unique(y)[:K])
    Xk, yk = sp.csr_matrix(X[keep]), y[keep]
    common = dict(sigma=1e-4, T=Xk.shape[0], seed=0)
    F.BLOCK_MIN_OUTPUTS = 2 if block else 10**9
    t0 = time.perf_counter()
    if model == "multinomial":
        run = F.prepare(Xk, yk, loss=model, **common)
        F._run_chunks(run, None, None, 0.0)
    else:
        F.fit_many(Xk, [np.where(yk == c, 1.0, -1.0) for c in np.unique(yk)], loss=model,
                   **common)
    return time.perf_counter() - t0


def main():
    rows, default = [], F.BLOCK_MIN_OUTPUTS
    for name, X, y in _sets():
        for model in ("multinomial", "logistic", "hinge"):
            for K in (k for k in KS if k <= np.unique(y).shape[0]):
                _arm(X, y, K, model, True)
                ratios = [_arm(X, y, K, model, True) / _arm(X, y, K, model, False)
                          for _ in range(REPEATS)]
                rows.append([name, model, K, fmt(ratios)])
                print(rows[-1], flush=True)
    F.BLOCK_MIN_OUTPUTS = default
    table = markdown_table(["set", "model", "K", "block / own vectors (or lock-step)"], rows)
    write_report("block_outputs", "From how many outputs a block pays",
                 [("A pass, block against apart", table)], Config(),
                 __doc__.split("\n\n")[1].replace("\n", " "))


if __name__ == "__main__":
    main()
