"""Every decoding path (teacher forcing, greedy incremental / recomputed / explained / static, the steps generator
that `deca serve` drives) gives, in float64, what it gave before the one decoding step: the same ids and lengths,
the same numbers (tests/fixtures/decoding_reference.pt, written by tests/mqan/decoding_reference.py)."""
import pytest
import torch

from tests.mqan.decoding_reference import CASES, PATH, outputs
from tests.mqan.test_model import ALL

REFERENCE = torch.load(PATH, weights_only=True)


@pytest.mark.parametrize("variant", ALL)
@pytest.mark.parametrize("seed, eos_bias", CASES)
def test_decoding_matches_the_float64_reference(variant, seed, eos_bias):
    torch.set_num_threads(1)
    want, have = REFERENCE[f"{variant}/{seed}/{eos_bias}"], outputs(variant, seed, eos_bias)
    assert sorted(have) == sorted(want)
    for key in want:
        assert have[key].dtype == want[key].dtype, key
        if want[key].dtype in (torch.long, torch.bool):
            assert torch.equal(have[key], want[key]), key
        else:
            torch.testing.assert_close(have[key], want[key], rtol=0, atol=1e-12, msg=key)
