"""The allowed values of the params keys that are a choice from a list, each list read from the code that acts
on it: deca.checks takes them as `choices` (deca imports no layer above it), so no list is written twice.
`deca train` (train/driver.py check_training) and `deca validate` (infra/validate_cli.py layers) pass them.
"""
from __future__ import annotations

from mqan.model import VARIANTS
from mqan.precision import DECODING, TRAINING
from train.data import BUCKETING

# train.placement_strategy: how Ray Train places the workers (train/driver.py hands it to its ScalingConfig)
PLACEMENT_STRATEGIES = ("PACK", "SPREAD", "STRICT_SPREAD", "STRICT_PACK")


def allowed_values() -> dict[str, tuple[str, ...]]:
    """Dotted key -> its allowed values: the model's variants (mqan/model.py), the training and decoding
    precisions (mqan/precision.py), the bucketing modes (train/data.py) and Ray's placement strategies."""
    return {"model.variant": tuple(VARIANTS), "train.bucketing": BUCKETING,
            "train.placement_strategy": PLACEMENT_STRATEGIES, "train.precision": TRAINING,
            "evaluate.precision": DECODING}
