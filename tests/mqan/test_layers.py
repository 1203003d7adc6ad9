"""mqan/layers.py: the decoding route of multi-head attention equals the general one."""
import pytest
import torch

from mqan.layers import MultiHead


@pytest.mark.parametrize("heads,head_dim", [(3, 8), (2, 5), (1, 16)])
def test_attend_one_equals_attention_over_projected_keys_and_values(heads, head_dim):
    torch.manual_seed(heads)
    attn = MultiHead(d=8, heads=heads, head_dim=head_dim, dropout=0.3).eval()
    x, y = torch.randn(4, 1, 8), torch.randn(4, 6, 8)
    mask = torch.arange(6)[None, :] < torch.tensor([6, 3, 1, 5])[:, None]  # [B, L], padding at the end
    want = attn(x, attn.keys_values(y), mask[:, None, None, :])
    have = attn.attend_one(x, y, mask)
    assert have.shape == want.shape == (4, 1, 8)
    assert torch.allclose(have, want, atol=1e-5)
    y_changed = y.clone()
    y_changed[2, 1:] = 100.0  # behind example 2's mask: no effect
    assert torch.allclose(attn.attend_one(x, y_changed, mask), have, atol=1e-6)
