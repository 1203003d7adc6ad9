"""The unpacked BiLSTM paths (each direction on the padded tensor; the staircase for the final state) against the
packed path: outputs, final states and every gradient, in float64; and the rule that picks a path."""
import pytest
import torch

from mqan import unpacked
from mqan.layers import BiLSTM
from mqan.packing import Packing

LENGTHS = [[5, 2, 7, 7, 1], [3, 1], [6, 6, 2], [1, 1, 1], [4, 4, 4], [1], [2, 9, 1, 9, 3, 3, 8]]


def force(monkeypatch, route=None):
    """Make BiLSTMs take `route`, or by default the unpacked path that fits (staircase for the final state)."""
    monkeypatch.setattr(unpacked, "path", lambda x, packing, final_state, layers:
                        route or ("staircase" if final_state else "directions"))


def run(bilstm, x, lengths, width, final_state):
    out, state = bilstm(x, Packing.of(torch.tensor(lengths), width), final_state=final_state)
    return out, state if final_state else None  # the packed path returns a state its caller discards


def grads(out, state, x, bilstm, g):
    loss = (out * g).sum() + (0 if state is None else (state[0] * 3).sum() + (state[1] * 5).sum())
    return torch.autograd.grad(loss, [x, *bilstm.parameters()])


@pytest.mark.parametrize("lengths", LENGTHS)
@pytest.mark.parametrize("final_state", [True, False])
@pytest.mark.parametrize("padding", [0, 2])
def test_unpacked_paths_give_the_packed_outputs_states_and_gradients(monkeypatch, lengths, final_state, padding):
    torch.manual_seed(2)
    bilstm = BiLSTM(6, 8).double()
    width = max(lengths) + padding  # also a batch padded past its longest row
    x = torch.randn(len(lengths), width, 6, dtype=torch.float64, requires_grad=True)
    force(monkeypatch, "packed")
    ref_out, ref_state = run(bilstm, x, lengths, width, final_state)
    g = torch.randn_like(ref_out)
    ref_grads = grads(ref_out, ref_state, x, bilstm, g)
    force(monkeypatch)
    out, state = run(bilstm, x, lengths, width, final_state)
    assert torch.allclose(out, ref_out, rtol=0, atol=1e-13)
    if final_state:
        assert all(torch.allclose(s, r, rtol=0, atol=1e-13) for s, r in zip(state, ref_state))
    assert all(torch.allclose(a, b, rtol=0, atol=1e-12) for a, b in zip(grads(out, state, x, bilstm, g), ref_grads))


def test_padding_stays_zero_on_the_unpacked_paths():
    torch.manual_seed(0)
    bilstm = BiLSTM(3, 4)
    x, packing = torch.randn(3, 5, 3), Packing.of(torch.tensor([5, 1, 3]), 5)
    for out in (unpacked.directions(bilstm.rnn, x, packing), unpacked.staircase(bilstm.rnn, x, packing)[0]):
        assert (out[1, 1:] == 0).all() and (out[2, 3:] == 0).all() and (out[0] != 0).all()


def test_fp32_on_the_cpu_runs_long_rows_unpacked_and_short_rows_packed():
    x32, x64 = torch.zeros(2, unpacked.LONG, 4), torch.zeros(2, unpacked.LONG, 4, dtype=torch.float64)
    long_rows, short_rows = Packing.of(torch.tensor([unpacked.LONG, 3]), unpacked.LONG), Packing.of(torch.tensor([5, 3]), 5)
    assert unpacked.path(x32, long_rows, False, 1) == ("directions" if unpacked.onednn(x32) else "packed")
    assert unpacked.path(x32, long_rows, True, 1) == ("staircase" if unpacked.onednn(x32) else "packed")
    assert unpacked.path(x32, short_rows, False, 1) == "packed"
    assert unpacked.path(x32, long_rows, False, 2) == "packed"  # stacked layers: nn.LSTM's inter-layer dropout
    assert unpacked.path(x64, long_rows, False, 1) == "packed"  # no oneDNN kernel for float64
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert unpacked.onednn(x32) == unpacked.onednn(x32.bfloat16())


def test_fp32_unpacked_paths_agree_with_packing_to_rounding():
    """fp32 on oneDNN's kernels (another order of summation than the packed loop): equal to rounding."""
    torch.manual_seed(1)
    bilstm = BiLSTM(16, 20)
    lengths = torch.tensor([unpacked.LONG, 10, 40, 1, unpacked.LONG - 1])
    x = torch.randn(5, unpacked.LONG, 16)
    packing = Packing.of(lengths, unpacked.LONG)
    h0 = x.new_zeros(2, 5, 10)
    packed, (h, c) = bilstm.rnn(packing.pack(x), (h0, h0))
    out, (h2, c2) = unpacked.staircase(bilstm.rnn, x, packing)
    assert torch.allclose(out, packing.unpack(packed), atol=1e-5)
    assert torch.allclose(h2, h, atol=1e-5) and torch.allclose(c2, c, atol=1e-5)
    assert torch.allclose(unpacked.directions(bilstm.rnn, x, packing), out, atol=1e-5)
