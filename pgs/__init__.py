"""pgs: the Primal Gradient Solver for lp-regularised linear models.

Zhu, Chen, Zhu, Wang, Wang, Chen, "Inverse Time Dependency in Convex Regularized
Learning", ICDM 2009.
"""

from pgs._core import LOSS_NAMES
from pgs._model import Model
from pgs._train import Progress, train

__version__ = "0.1.0"

__all__ = ["LOSS_NAMES", "Model", "Progress", "train", "__version__"]
