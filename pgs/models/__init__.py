"""The fitted models and their file format; every kind is registered here, so that
`load_model` knows them all as soon as any part of this package is imported."""

from pgs.models.csgd_model import CAdalineModel, CSGDModel
from pgs.models.file_format import MODEL_KINDS
from pgs.models.multiclass import MulticlassModel
from pgs.models.ovr import OneVsRestModel
from pgs.models.pgs_model import Model

MODEL_KINDS.update((cls._kind, cls) for cls in (Model, CSGDModel, CAdalineModel,
                                                OneVsRestModel, MulticlassModel))
