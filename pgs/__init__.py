"""pgs: the Primal Gradient Solver for lp-regularised linear models.

Zhu, Chen, Zhu, Wang, Wang, Chen, "Inverse Time Dependency in Convex Regularized
Learning", ICDM 2009.
"""

from pgs import _estimator_model  # noqa: F401  (registers the "ovr" model kind)
from pgs._csgd_train import train_cadaline, train_csgd
from pgs._defaults import DEFAULTS, PAPER
from pgs._io import dump_svmlight, load_svmlight, load_svmlight_files
from pgs._loss_table import LOSS_NAMES
from pgs._model import Model
from pgs._model_io import load_model
from pgs._train import DivergedError, Progress, train

__version__ = "0.1.0"

__all__ = [
    "DEFAULTS", "DivergedError", "LOSS_NAMES", "Model", "PAPER", "Progress", "__version__",
    "dump_svmlight",
    "load_model", "load_svmlight", "load_svmlight_files", "train", "train_cadaline",
    "train_csgd",
]

_ESTIMATORS = ("PGSClassifier", "PGSRegressor")


def __getattr__(name):
    # The scikit-learn estimators are loaded on first access so that pgs.train never
    # needs scikit-learn.
    if name in _ESTIMATORS:
        try:
            from pgs import estimators
        except ImportError as exc:
            raise ImportError(
                f"pgs.{name} needs scikit-learn: install it with `pip install pgs[sklearn]` "
                f"({exc})"
            ) from exc
        return getattr(estimators, name)
    raise AttributeError(f"module 'pgs' has no attribute {name!r}")
