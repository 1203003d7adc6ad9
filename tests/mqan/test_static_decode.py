"""Greedy decoding with static shapes (the CUDA-graph path, run eagerly on the CPU) chooses what MQAN._greedy
chooses, and a host check every few steps gives the same result as a check every step."""
import pytest
import torch

from tests.support import VOCAB, tiny_model
from tests.mqan.test_model import ALL, random_rows
from mqan import static_decode, syncs
from mqan.batch import collate
from mqan.vocab import PAD_ID


@pytest.mark.parametrize("variant", ALL)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_static_decoding_equals_incremental_decoding(variant, seed):
    model = tiny_model(variant, seed=seed).eval()
    b = collate(random_rows(7, seed=seed), VOCAB)
    ref = model.greedy(b, max_len=6)
    out = model.greedy(b, max_len=6, cuda_graphs=True)
    assert torch.equal(out.ids, ref.ids) and out.tokens == ref.tokens
    assert torch.equal(out.lengths, ref.lengths)
    assert torch.allclose(out.log_probs, ref.log_probs, atol=1e-5)
    assert torch.allclose(out.source_weights, ref.source_weights, atol=1e-5)


@pytest.mark.parametrize("every", [2, 4, 8])
def test_checking_for_the_end_every_few_steps_changes_nothing(monkeypatch, every):
    model = tiny_model("mqan").eval()
    b = collate(random_rows(6, seed=3), VOCAB)
    ref = model.greedy(b, max_len=7)
    st, steps = static_decode.run(model, model.encode(b), 7, graphs=False, check=every)
    assert steps == ref.ids.shape[1]
    assert torch.equal(st.ids[:, :steps].masked_fill(st.finished[:, :steps], PAD_ID), ref.ids)
    monkeypatch.setattr(syncs, "check_every", lambda device: every)  # the eager loop's check, as on a GPU
    out = model.greedy(b, max_len=7)
    assert torch.equal(out.ids, ref.ids) and torch.equal(out.lengths, ref.lengths) and out.tokens == ref.tokens


def test_explain_and_recomputed_prefix_keep_the_eager_path():
    model = tiny_model("mqan").eval()
    b = collate(random_rows(4, seed=5), VOCAB)
    out = model.greedy(b, max_len=5, cuda_graphs=True, explain=True)
    assert out.contributions is not None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (bench/gpu_check.sh runs it on one)")
@pytest.mark.parametrize("variant", ALL)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cuda_graph_replay_equals_eager_decoding_on_a_gpu(variant, dtype):
    from mqan import precision

    model = tiny_model(variant, seed=1).cuda().eval()
    b = collate(random_rows(9, seed=7), VOCAB, "cuda")
    with torch.no_grad(), precision.autocast(torch.device("cuda"), dtype):
        ref = model.greedy(b, max_len=6)
        out = model.greedy(b, max_len=6, cuda_graphs=True)
        eager_static, steps = static_decode.run(model, model.encode(b), 6, graphs=False)
        graphed, steps_g = static_decode.run(model, model.encode(b), 6, graphs=True)
    assert torch.equal(out.ids, ref.ids) and out.tokens == ref.tokens and steps == steps_g
    assert torch.equal(graphed.ids, eager_static.ids)
    assert torch.allclose(graphed.log_probs, eager_static.log_probs, atol=1e-4)
