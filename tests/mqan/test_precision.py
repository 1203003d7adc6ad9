"""bf16 mixed precision and int8 decoding (mqan/precision.py): close to fp32, on the CPU; fp32 itself is
unchanged (tests/mqan/test_model_reference.py)."""
from __future__ import annotations

import logging
import os

import pytest
import torch

from tests.support import VOCAB, tiny_model
from deca.errors import ConfigError
from tests.mqan.test_model import ALL, random_rows
from mqan import precision
from mqan.batch import collate
from mqan.checkpoint import load_model, save_checkpoint
from mqan.decode import decode

torch.set_num_threads(1)
CPU = torch.device("cpu")
# bf16 keeps 8 bits of mantissa: a relative error of about 2^-8 per product, some tenths of a percent
# through the layers of this tiny model; the loss is reduced in fp32.
LOSS_TOLERANCE = 0.02  # relative
GRADIENT_COSINE = 0.99  # each weight's gradient points the same way as fp32's


def loss_and_gradients(variant: str, mode: str) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    model = tiny_model(variant, seed=1, dropout=0.3).eval()
    batch = collate(random_rows(7, seed=3), VOCAB)
    with precision.autocast(CPU, mode):
        loss = model(batch)
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("variant", ALL)
def test_bf16_loss_and_gradients_are_close_to_fp32(variant):
    loss32, grads32 = loss_and_gradients(variant, "fp32")
    loss16, grads16 = loss_and_gradients(variant, "bf16")
    assert loss16.dtype == torch.float32  # the loss is reduced in fp32
    assert abs(loss16 - loss32) <= LOSS_TOLERANCE * abs(loss32)
    assert grads16.keys() == grads32.keys()
    for name, g in grads32.items():
        assert grads16[name].dtype == torch.float32, name  # fp32 master weights get fp32 gradients
        if g.norm() > 1e-6:
            assert torch.nn.functional.cosine_similarity(g.flatten(), grads16[name].flatten(), dim=0) > GRADIENT_COSINE, name


def test_a_bf16_training_step_and_bf16_and_int8_decoding_run_on_the_cpu(tmp_path):
    model = tiny_model("mqan", seed=2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    batch = collate(random_rows(6, seed=4), VOCAB)
    for _ in range(3):
        opt.zero_grad()
        with precision.autocast(CPU, "bf16"):
            loss = model(batch)
        loss.backward()
        opt.step()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    path = save_checkpoint(tmp_path / "bf16.pt", model)  # trained in bf16: fp32 weights on disk
    loaded, vocab, _ = load_model(path)
    rows = random_rows(9, seed=5)
    fp32 = decode(loaded, vocab, rows, 4, 5, CPU)
    for mode in ("bf16", "int8"):
        answers = decode(loaded, vocab, rows, 4, 5, CPU, precision=mode)
        assert len(answers) == len(rows) and all(isinstance(a.text, str) for a in answers)
    assert decode(loaded, vocab, rows, 4, 5, CPU) == fp32  # int8 decoding left the model as it was
    assert isinstance(loaded.out, torch.nn.Linear)


def test_an_fp32_checkpoint_decodes_in_bf16_like_fp32_mostly(tmp_path):
    model = tiny_model("mqan", seed=6)
    path = save_checkpoint(tmp_path / "fp32.pt", model)
    loaded, vocab, _ = load_model(path)
    rows = random_rows(20, seed=7)
    fp32 = [a.text for a in decode(loaded, vocab, rows, 8, 4, CPU)]
    bf16 = [a.text for a in decode(loaded, vocab, rows, 8, 4, CPU, precision="bf16")]
    assert sum(a == b for a, b in zip(fp32, bf16)) >= len(rows) // 2  # untrained: near-ties can flip


@pytest.mark.parametrize("value, where", [("fp8", "train.precision"), ("half", "--precision")])
def test_an_unknown_precision_is_one_line_with_the_choices(value, where):
    with pytest.raises(ConfigError, match=f"{where}: '{value}' is not a precision; choose one of fp32, bf16"):
        precision.check(value, where)


def test_bf16_without_bf16_units_says_so_and_runs_fp32(monkeypatch, caplog):
    monkeypatch.setattr(precision, "bf16_supported", lambda device: False)
    with caplog.at_level(logging.WARNING):
        assert precision.resolve("bf16", CPU, "--precision", precision.DECODING) == "fp32"
    assert "no bf16 units" in caplog.text and "int8 speeds up decoding" in caplog.text
    assert precision.resolve("int8", CPU, "--precision", precision.DECODING) == "int8"
    with pytest.raises(ConfigError, match="int8"):
        precision.resolve("int8", CPU, "train.precision")  # decoding only


def test_every_precision_on_a_cpu_caps_onednns_kernel_cache_unless_the_environment_sets_it(monkeypatch):
    monkeypatch.setattr(precision, "bf16_supported", lambda device: True)
    for name in ("fp32", "bf16"):
        monkeypatch.delenv(precision.ONEDNN_CACHE, raising=False)
        assert precision.resolve(name, CPU, "train.precision") == name
        assert os.environ[precision.ONEDNN_CACHE] == str(precision.ONEDNN_CACHE_KERNELS)
    monkeypatch.setenv(precision.ONEDNN_CACHE, "8")
    precision.resolve("bf16", CPU, "train.precision")
    assert os.environ[precision.ONEDNN_CACHE] == "8"  # the user's setting wins
