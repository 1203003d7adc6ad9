"""The training step and a greedy decoding step run no synchronising operation on the GPU path.

On the CPU the check is structural: `syncs.avoid` is forced on (the GPU branches), and `SyncRecorder` lists
every aten operation that needs a value or size from the device. On a GPU, `torch.cuda.set_sync_debug_mode`
says the same (the CUDA test, skipped here without one; bench/gpu_check.sh runs it on a GPU machine).
"""
import pytest
import torch

from tests.support import VOCAB, tiny_model
from tests.mqan.test_model import random_rows
from mqan import mixture, static_decode, syncs
from mqan.batch import collate
from mqan.syncs import SyncRecorder


def _batch(device="cpu"):
    b = collate(random_rows(6, seed=4), VOCAB, device)
    for seq in (b.context, b.question, b.context_question):
        seq.packing(b.answer_targets.device)  # host-side work of the batch, done when it is collated
    return b


def test_the_recorder_sees_what_synchronises():
    x = torch.randn(4)
    with SyncRecorder() as rec:
        x.sum().item()
        x[x > 0]
        bool((x > 0).all())
        torch.unique(x)
    assert rec.calls == ["_local_scalar_dense", "index", "_local_scalar_dense", "_unique2"]


@pytest.mark.parametrize("variant", ["s2s", "mqan"])
def test_a_training_step_has_no_synchronising_operation(monkeypatch, variant):
    monkeypatch.setattr(syncs, "avoid", lambda t: True)
    model = tiny_model(variant, word_dropout=0.1).train()
    b = _batch()
    with SyncRecorder() as rec:
        loss = model(b)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    assert rec.calls == []


def test_a_training_step_without_the_gpu_branches_does_synchronise(monkeypatch):
    """The CPU keeps `unique` (cheaper there): the recorder sees it, so the test above can fail."""
    model = tiny_model("mqan").train()
    with SyncRecorder() as rec:
        model(_batch()).backward()
    assert "_unique2" in rec.calls


def test_a_greedy_step_has_no_synchronising_operation(monkeypatch):
    monkeypatch.setattr(syncs, "avoid", lambda t: True)
    model = tiny_model("mqan").eval()
    b = _batch()
    with torch.no_grad():
        enc = model.encode(b)
        st = static_decode.new_state(model, enc, 5)
        cand = mixture.Candidates.of(enc.context_ext, enc.question_ext)
        with SyncRecorder() as rec:
            for _ in range(3):
                static_decode.step(model, enc, st, cand)
    assert rec.calls == [] and int(st.t) == 3


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (bench/gpu_check.sh runs it on one)")
def test_on_a_gpu_the_step_and_the_decoding_loop_do_not_synchronise():
    model = tiny_model("mqan").cuda().train()
    b = _batch("cuda")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(b).backward()  # first step: lazy initialisation (cuBLAS, cuDNN) may synchronise
    opt.step()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        loss = model(b)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        with torch.no_grad():
            model.eval()
            enc = model.encode(b)
            st = static_decode.new_state(model, enc, 5)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    cand = mixture.Candidates.of(enc.context_ext, enc.question_ext)  # unique: once per batch, before the loop
    torch.cuda.set_sync_debug_mode("error")
    try:
        with torch.no_grad():
            for _ in range(3):
                static_decode.step(model, enc, st, cand)
    finally:
        torch.cuda.set_sync_debug_mode(0)
