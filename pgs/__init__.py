"""pgs: the Primal Gradient Solver for lp-regularised linear models.

Zhu, Chen, Zhu, Wang, Wang, Chen, "Inverse Time Dependency in Convex Regularized
Learning", ICDM 2009.
"""

from pgs._version import __version__
from pgs.engine.solver import DivergedError, Progress
from pgs.io.svmlight import dump_svmlight, load_svmlight, load_svmlight_files
from pgs.models import Model, MulticlassModel, OneVsRestModel
from pgs.models.file_format import load_model
from pgs.rules.defaults import DEFAULTS, PAPER
from pgs.rules.losses import LOSS_NAMES
from pgs.training.csgd import train_cadaline, train_csgd
from pgs.training.train import train

__all__ = [
    "DEFAULTS", "DivergedError", "LOSS_NAMES", "Model", "MulticlassModel", "OneVsRestModel",
    "PAPER", "Progress",
    "__version__",
    "dump_svmlight", "load_model", "load_svmlight", "load_svmlight_files", "train",
    "train_cadaline", "train_csgd",
]

_ESTIMATORS = ("PGSClassifier", "PGSRegressor")


def __getattr__(name):
    if name == "sparse":    # (as `import pgs.sparse` would: the docs write pgs.sparse.l1_path)
        import importlib
        return importlib.import_module("pgs.sparse")
    # The scikit-learn estimators are loaded on first access so that pgs.train never
    # needs scikit-learn.
    if name in _ESTIMATORS:
        try:
            from pgs import estimators
        except ImportError as exc:
            raise ImportError(f"pgs.{name} needs scikit-learn: install it with "
                              f"`pip install pgs[sklearn]` ({exc})") from exc
        return getattr(estimators, name)
    raise AttributeError(f"module 'pgs' has no attribute {name!r}")
