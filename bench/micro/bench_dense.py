"""Dense X to CSR: pgs's compiled conversion (`pgs.rules.data.as_csr_buffers`) against
scipy's ``csr_matrix(X)`` (through COO), which every fit on a dense X pays first. Wall
seconds, medians [min-max] of `cfg.repeats` rounds, the two in turn; the same buffers."""

import numpy as np
import scipy.sparse as sp

from bench.harness.common import fmt, markdown_table, timed, write_report
from bench.harness.data import dense_hard, mnist
from pgs.rules.data import as_csr_buffers


def run(cfg):
    """Time both on MNIST and a generated dense set; write results/dense.md."""
    sets = [("MNIST (real, 60,000 x 784)", mnist()[0]),
            ("dense hard (generated, 100,000 x 100)", dense_hard().X_train.toarray())]
    rows = []
    for name, X in sets:
        secs = {"scipy": [], "pgs": []}
        for _ in range(cfg.repeats):
            for who, convert in (("scipy", sp.csr_matrix), ("pgs", as_csr_buffers)):
                secs[who].append(timed(convert, X)[0])
        rows.append([name, fmt(secs["scipy"], 3), fmt(secs["pgs"], 3),
                     fmt(np.array(secs["pgs"]) / np.array(secs["scipy"]), 2)])
    table = markdown_table(["set", "scipy csr_matrix s", "pgs s", "pgs / scipy"], rows)
    return write_report("dense", "Dense X to CSR", [("", table)], cfg, __doc__)
