"""The model computes what it computed before the speed work: losses, gradients, teacher-forced
probabilities and greedy outputs of every variant match tests/fixtures/mqan_reference.pt (written by
tests/mqan/model_reference.py) within floating-point tolerance."""
import pytest
import torch

from tests.mqan.model_reference import PATH, outputs
from tests.mqan.test_model import ALL

REFERENCE = torch.load(PATH, weights_only=True)


@pytest.mark.parametrize("variant", ALL)
def test_outputs_match_the_reference(variant):
    torch.set_num_threads(1)
    want, have = REFERENCE[variant], outputs(variant)
    assert sorted(have) == sorted(want)
    for key in want:
        if want[key].dtype in (torch.long, torch.bool):
            assert torch.equal(have[key], want[key]), key
        else:
            torch.testing.assert_close(have[key], want[key], rtol=1e-4, atol=1e-5, msg=key)
