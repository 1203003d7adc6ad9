"""The packed and unpacked LSTM paths against torch's pack_padded_sequence, exactly (float64)."""
import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from mqan.layers import BiLSTM
from mqan import packing as packing_module
from mqan.packing import Packing


def reference(bilstm: BiLSTM, x, lengths):
    """BiLSTM's computation as torch's own packing utilities do it (the path before mqan/packing.py)."""
    B, L, _ = x.shape
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, (h, c) = bilstm.rnn(packed)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=L)
    merge = lambda s: s.view(-1, 2, B, s.shape[-1]).transpose(1, 2).reshape(-1, B, 2 * s.shape[-1])  # noqa: E731
    return out, merge(h), merge(c)


@pytest.mark.parametrize("lengths", [[5, 2, 7, 7, 1], [3, 3, 3], [1], [4, 6]])
@pytest.mark.parametrize("layers", [1, 2])
def test_packing_gives_exactly_what_pack_padded_sequence_gives(lengths, layers):
    torch.manual_seed(0)
    bilstm = BiLSTM(6, 8, layers).double().eval()
    L = max(lengths)
    x = torch.randn(len(lengths), L, 6, dtype=torch.float64, requires_grad=True)
    lengths = torch.tensor(lengths)
    out, (h, c) = bilstm(x, lengths)
    ref_out, ref_h, ref_c = reference(bilstm, x, lengths)
    assert torch.equal(out, ref_out) or torch.allclose(out, ref_out, rtol=0, atol=1e-13)
    assert torch.allclose(h, ref_h, rtol=0, atol=1e-13) and torch.allclose(c, ref_c, rtol=0, atol=1e-13)
    g = torch.randn_like(out)
    grad, = torch.autograd.grad((out * g).sum() + h.sum(), x)
    ref_grad, = torch.autograd.grad((ref_out * g).sum() + ref_h.sum(), x)
    assert torch.allclose(grad, ref_grad, rtol=0, atol=1e-12)


def test_equal_lengths_run_unpacked_and_padding_stays_zero():
    lengths = torch.tensor([4, 4, 4])
    assert Packing.of(lengths, 4).equal and not Packing.of(lengths, 5).equal
    packing = Packing.of(torch.tensor([3, 1, 2]), 3)
    assert packing.batch_sizes.tolist() == [3, 2, 1] and Packing.of(lengths, 4).index.tolist() == [0, 4, 8, 1, 5, 9,
                                                                                                  2, 6, 10, 3, 7, 11]
    assert packing.index.tolist() == [0, 6, 3, 1, 7, 2]  # time-major over rows sorted by length: 0, 2, 1
    bilstm = BiLSTM(2, 4)
    out, _ = bilstm(torch.randn(3, 3, 2), torch.tensor([3, 1, 2]))
    assert (out[1, 1:] == 0).all() and (out[2, 2:] == 0).all()


def test_the_unpacked_path_is_the_packed_path_for_equal_lengths():
    """Equal lengths take nn.LSTM on the padded tensor; forcing the packed layout gives the same (float64)."""
    torch.manual_seed(1)
    bilstm = BiLSTM(5, 6).double()
    x = torch.randn(4, 7, 5, dtype=torch.float64)
    lengths = torch.full((4,), 7)
    out, (h, c) = bilstm(x, lengths)
    ref_out, ref_h, ref_c = reference(bilstm, x, lengths)
    assert torch.allclose(out, ref_out, rtol=0, atol=1e-13) and torch.allclose(c, ref_c, rtol=0, atol=1e-13)
    assert isinstance(bilstm.rnn, nn.LSTM)


def test_equal_lengths_can_still_be_packed(monkeypatch):
    """Where unpacked runs are slow (a GPU under bf16 autocast) equal lengths take the packed path: same result."""
    torch.manual_seed(3)
    bilstm = BiLSTM(5, 6).double()
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    lengths = torch.full((3,), 4)
    out, (h, c) = bilstm(x, lengths)
    monkeypatch.setattr(packing_module, "run_unpacked", lambda x: False)
    out2, (h2, c2) = bilstm(x, lengths)
    assert torch.allclose(out, out2, rtol=0, atol=1e-13) and torch.allclose(c, c2, rtol=0, atol=1e-13)


def test_reverse_index_reverses_each_rows_real_positions_and_is_an_involution():
    p = Packing.of(torch.tensor([3, 1, 2]), 3)
    x = torch.arange(9.0).view(3, 3, 1)
    assert p.reverse_rows(x)[..., 0].tolist() == [[2, 1, 0], [3, 4, 5], [7, 6, 8]]
    assert torch.equal(p.reverse_rows(p.reverse_rows(x)), x)
    assert p.real.tolist() == [[True, True, True], [True, False, False], [True, True, False]]


def test_segments_list_each_distinct_length_with_the_rows_running_to_it_and_past_it():
    assert Packing.of(torch.tensor([5, 2, 7, 7, 1]), 7).segments == ((1, 5, 4), (2, 4, 3), (5, 3, 2), (7, 2, 0))
    assert Packing.of(torch.tensor([3, 3]), 4).segments == ((3, 2, 0),)
