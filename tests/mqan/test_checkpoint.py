import pytest
import torch

from tests.support import GEN, OOV, VOCAB, FillingFile, tiny_cfg, tiny_model
from deca.errors import DataError
from tests.mqan.test_model import random_rows
from mqan.batch import collate
from mqan.checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from mqan.model import build_model
from mqan.vocab import Vocab

torch.set_num_threads(1)


def test_round_trip_restores_outputs_config_and_extra(tmp_path):
    model = tiny_model("mqan", seed=5).eval()
    b = collate(random_rows(4), VOCAB)
    opt = torch.optim.Adam(model.parameters())
    model.train()
    model(b).backward()
    opt.step()
    model.eval()
    path = save_checkpoint(tmp_path / "ckpt" / "model.pt", model, extra={"iteration": 7, "optimizer": opt.state_dict()})
    assert [p.name for p in path.parent.iterdir()] == ["model.pt"]  # no temporary file left behind
    loaded, extra = load_checkpoint(path, VOCAB)
    loaded.eval()
    assert loaded.cfg == model.cfg and extra["iteration"] == 7
    opt2 = torch.optim.Adam(loaded.parameters())
    opt2.load_state_dict(extra["optimizer"])
    assert torch.equal(model.token_log_probs(b), loaded.token_log_probs(b))
    assert model.greedy(b).tokens == loaded.greedy(b).tokens


def test_refuses_another_vocabulary(tmp_path):
    path = save_checkpoint(tmp_path / "m.pt", tiny_model("s2s"))
    other = Vocab.from_tokens(GEN + OOV[::-1], VOCAB.generative_size)
    with pytest.raises(DataError, match="another vocabulary"):
        load_checkpoint(path, other)


def test_loading_is_weights_only(tmp_path):
    from tests.support import Planted

    bad, marker = tmp_path / "evil.pt", tmp_path / "ran"
    torch.save({"format": "deca-mqan/2", "x": Planted(marker)}, bad)
    with pytest.raises(DataError, match=r"evil\.pt: not a checkpoint written by deca train; refused: it would run "
                                        r"code \(posix\.mkdir\)") as info:
        read_checkpoint(bad)
    assert not marker.exists() and len(str(info.value).splitlines()) == 2  # the line and its fix
    (tmp_path / "trunc.pt").write_bytes(save_checkpoint(tmp_path / "ok.pt", tiny_model("s2s")).read_bytes()[:100])
    with pytest.raises(DataError, match="not a complete checkpoint: the file \\(100 bytes\\) is truncated"):
        read_checkpoint(tmp_path / "trunc.pt")
    torch.save({"format": "other"}, tmp_path / "foreign.pt")
    with pytest.raises(DataError, match="not a"):
        read_checkpoint(tmp_path / "foreign.pt")


def test_frozen_vectors_are_not_stored_but_reopened_and_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("DECA_VECTOR_CACHE", str(tmp_path / "cache"))
    vectors = tmp_path / "w.txt"
    vectors.write_text("w1 1 2 3\nx2 4 5 6\n", encoding="utf-8")
    cfg = tiny_cfg("catt", word_vectors=str(vectors))
    model = build_model(cfg, VOCAB)
    path = save_checkpoint(tmp_path / "m.pt", model)
    assert not any("frozen" in k for k in read_checkpoint(path)["state_dict"])
    assert read_checkpoint(path)["vectors"]["word_vectors"]["name"] == str(vectors)
    loaded, _ = load_checkpoint(path, VOCAB)  # reopens the source named in the config
    assert torch.equal(loaded.embed.gen_frozen, model.embed.gen_frozen)
    vectors.write_text("w1 1 2 3\nx2 4 5 7\n", encoding="utf-8")
    with pytest.raises(DataError, match="model.word_vectors: the model was trained with"):
        load_checkpoint(path, VOCAB)


def test_weights_of_another_architecture_are_refused(tmp_path):
    path = save_checkpoint(tmp_path / "m.pt", tiny_model("mqan"))
    payload = torch.load(path, weights_only=True)
    payload["model_config"]["variant"] = "s2s"
    torch.save(payload, tmp_path / "edited.pt")
    with pytest.raises(DataError, match="do not fit"):
        load_checkpoint(tmp_path / "edited.pt", VOCAB)


def test_rows_by_token_keeps_the_trained_row_of_every_shared_token():
    from mqan.checkpoint import _rows_by_token

    fresh, trained = torch.zeros(4, 2), torch.arange(6.0).reshape(3, 2)
    out = _rows_by_token(fresh, trained, ["<pad>", "b", "new", "a"], ["<pad>", "a", "b"])
    assert out.tolist() == [[0, 1], [4, 5], [0, 0], [2, 3]]
    assert fresh.abs().sum() == 0  # the fresh tensor itself is left alone


def test_a_checkpoint_written_by_the_previous_layout_loads_and_answers_the_same():
    """tests/fixtures/checkpoints/layout-e0a3361.pt was written by train/checkpoint.py before the model moved
    to mqan (commit e0a3361): it holds no pickled project class, so it loads here unchanged."""
    import json
    from pathlib import Path

    from mqan.checkpoint import load_model

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
    expected = json.loads((fixture / "layout-e0a3361.json").read_text(encoding="utf-8"))
    model, vocab, extra = load_model(fixture / "layout-e0a3361.pt")
    assert extra == {"iteration": 12} and vocab.fingerprint == VOCAB.fingerprint
    out = model.greedy(collate(expected["rows"], vocab))
    assert out.texts == expected["texts"] and out.tokens == expected["tokens"]


def test_a_directory_is_called_a_directory_with_the_file_to_give(tmp_path):
    run = tmp_path / "checkpoints" / "pipeline"
    save_checkpoint(run / "best" / "model.pt", tiny_model("s2s"))
    with pytest.raises(DataError) as err:
        read_checkpoint(run)
    assert "truncated" not in str(err.value)
    assert str(err.value).splitlines() == [
        f"{run}: a directory, not a checkpoint file",
        f"  fix: a run directory goes with --run {run} (it uses the run's best model); "
        f"or give the file: --checkpoint {run / 'best' / 'model.pt'}"]
    with pytest.raises(DataError, match=f"a directory, not a checkpoint file\n  fix: the checkpoint file is "
                                        f"{run / 'best' / 'model.pt'}"):
        read_checkpoint(run / "best")
    with pytest.raises(DataError, match="a directory, not a checkpoint file\n  fix: give a model file"):
        read_checkpoint(tmp_path)


def test_a_full_disk_is_a_write_error_naming_the_file_and_leaves_nothing(tmp_path, monkeypatch):
    """torch.save given a path fails with a RuntimeError ("unexpected pos") that names no file nor the cause."""
    from deca.errors import WriteError

    monkeypatch.setattr("mqan.checkpoint.open", lambda path, mode: FillingFile(path, mode, room=1000), raising=False)
    target = tmp_path / "run" / "best" / "model.pt"
    with pytest.raises(WriteError, match=f"^{target}: No space left on device\n  fix: free space"):
        save_checkpoint(target, tiny_model())
    assert list(tmp_path.iterdir()) == []  # neither the file nor the folders made for it
