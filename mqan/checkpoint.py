"""Model files: what a trained MQAN needs to answer, in one torch file.

`save_checkpoint` / `load_model` (a run keeps its best model in `<run dir>/best/model.pt`, see deca/runs.py):
weights, model config, the vocabulary (its tokens and fingerprint) and the pre-trained vector sources
(name + fingerprint) in one torch file, so that `load_model` needs nothing else.

Loading uses ``torch.load(weights_only=True)`` (no pickled code runs) and refuses a vocabulary whose
fingerprint differs from the one the model was trained with. Pre-trained vectors are *not* stored (GloVe
840B alone is 2.6 GB): they are reopened from the sources named in the model config (or passed in), and
a source whose fingerprint differs from the recorded one is refused.
Files are written to a temporary name and renamed, so a crash never leaves half a checkpoint; a full disk is
a WriteError naming the file (`torch_save`).
The resumable training state is another thing (train/state.py).
"""
from __future__ import annotations

import dataclasses
import zipfile
from pathlib import Path
from typing import Any

import torch

from deca.config import ModelConfig, from_dict
from deca.errors import ConfigError, DataError, load_refusal
from deca.io import as_write_error, atomic_write
from mqan.model import MQAN, build_model, vector_sources
from mqan.vectors import VectorSource
from mqan.vocab import Vocab

FORMAT = "deca-mqan/3"  # 2: inputs featurized from token strings, vector sources recorded; 3: vocabulary inside
READABLE = ("deca-mqan/2", FORMAT)


def save_checkpoint(path: str | Path, model: MQAN, extra: dict[str, Any] | None = None) -> Path:
    """Write `model` (and `extra`: tensors, numbers, strings, lists, dicts, e.g. an optimizer state) to `path`."""
    path = Path(path)
    payload = {
        "format": FORMAT,
        "model_config": dataclasses.asdict(model.cfg),
        "vocab_fingerprint": model.vocab.fingerprint,
        "vocab_size": len(model.vocab),
        "vocab_tokens": list(model.vocab.itos),  # self-contained: predict/evaluate/serve need only this file
        "generative_size": model.generative_size,
        "vectors": vector_sources(model),
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "extra": extra or {},
    }
    return atomic_write(path, lambda tmp: torch_save(payload, tmp))


def torch_save(obj: Any, path: str | Path) -> Path:
    """``torch.save(obj, path)`` through a Python file, so that a full disk is an OSError (ENOSPC) and comes out
    as a WriteError naming `path`: given a path, torch's own writer fails with a RuntimeError ("unexpected pos")
    that says neither."""
    try:
        with open(path, "wb") as f:
            torch.save(obj, f)
    except Exception as exc:
        err = as_write_error(exc, Path(path))
        if err is exc:
            raise
        raise err from exc
    return Path(path)


def read_checkpoint(path: str | Path, map_location="cpu") -> dict[str, Any]:
    """The raw payload (weights_only loading); a DataError names the file if it is not a checkpoint."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "checkpoint not found", fix="check the path (train writes them under train.storage_dir)")
    if path.is_dir():
        if (path / "best" / "model.pt").is_file():  # a run directory (deca/runs.py)
            fix = (f"a run directory goes with --run {path} (it uses the run's best model); "
                   f"or give the file: --checkpoint {path / 'best' / 'model.pt'}")
        elif (path / "model.pt").is_file():
            fix = f"the checkpoint file is {path / 'model.pt'}"
        else:
            fix = "give a model file (a run's best/model.pt), or a run directory with --run DIR"
        raise DataError(path, "a directory, not a checkpoint file", fix=fix)
    if not zipfile.is_zipfile(path):
        raise DataError(path, f"not a complete checkpoint: the file ({path.stat().st_size:,} bytes) is truncated "
                              "or not a torch file", fix="use another checkpoint (an earlier one, or retrain); "
                                                         "`deca train` writes them atomically")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # corrupt archive, foreign pickle (weights_only refuses code), ...
        raise DataError(path, f"not a checkpoint written by deca train; {load_refusal(exc)}",
                        fix="use a checkpoint written by `deca train` (mqan/checkpoint.py)") from None
    if not isinstance(payload, dict) or payload.get("format") not in READABLE:
        raise DataError(path, f"not a {FORMAT} checkpoint", fix="use a checkpoint written by mqan/checkpoint.py")
    return payload


def load_checkpoint(path: str | Path, vocab: Vocab, word_vectors: VectorSource | None = None,
                    char_vectors: VectorSource | None = None, map_location="cpu",
                    progress: bool = False) -> tuple[MQAN, dict[str, Any]]:
    """Rebuild the model of a checkpoint for `vocab`; returns (model, extra).

    Refuses (DataError) a vocabulary with another fingerprint, or pre-trained vectors other than the
    training ones. `word_vectors` / `char_vectors` override opening the sources named in the stored config.
    """
    payload = read_checkpoint(path, map_location)
    model = model_from_payload(path, payload, vocab, word_vectors, char_vectors, progress)
    return model, payload["extra"]


def load_model(path: str | Path, vocab_path: str | Path | None = None, device="cpu",
               progress: bool = False) -> tuple[MQAN, Vocab, dict[str, Any]]:
    """(model in eval mode on `device`, its vocabulary, the checkpoint's extra), reading the checkpoint once.

    The vocabulary is the one stored in the checkpoint (format 3); a format-2 checkpoint needs `vocab_path`
    (the data/vocab.txt it was trained with), whose fingerprint is checked."""
    payload = read_checkpoint(path, device)
    max_generative = int(payload["model_config"]["max_generative_vocab"])
    if payload.get("vocab_tokens"):
        vocab = Vocab(payload["vocab_tokens"], max_generative)
    elif vocab_path is not None:
        vocab = Vocab.load(vocab_path, max_generative)
    else:
        raise DataError(path, "the checkpoint does not carry its vocabulary (written before format 3)",
                        fix="give the data/vocab.txt it was trained with (data.vocab_path)")
    model = model_from_payload(path, payload, vocab, progress=progress)
    return model.to(device).eval(), vocab, payload["extra"]


def model_from_payload(path: str | Path, payload: dict[str, Any], vocab: Vocab,
                       word_vectors: VectorSource | None = None, char_vectors: VectorSource | None = None,
                       progress: bool = False) -> MQAN:
    """The model of a checkpoint payload (`read_checkpoint`), checked against `vocab` and the vector sources."""
    path = Path(path)
    if payload["vocab_fingerprint"] != vocab.fingerprint:
        raise DataError(path, f"the checkpoint was trained with another vocabulary (fingerprint "
                              f"{payload['vocab_fingerprint'][:12]}, {payload['vocab_size']} tokens) than the one "
                              f"given ({vocab.fingerprint[:12]}, {len(vocab)} tokens)",
                        fix="load the data/vocab.txt the model was trained with (or retrain)")
    try:
        cfg = from_dict(ModelConfig, payload["model_config"], where=f"{path}: model_config")
    except ConfigError as exc:
        raise DataError(path, str(exc), fix="this checkpoint comes from another version of the code") from None
    if payload["generative_size"] != min(cfg.max_generative_vocab, len(vocab)):
        raise DataError(path, f"generative vocabulary size {payload['generative_size']} does not match the config",
                        fix="the checkpoint is inconsistent; use another one")
    model = build_model(cfg, vocab, word_vectors, char_vectors, progress=progress)
    check_vectors(path, payload["vectors"], vector_sources(model))
    try:
        model.load_state_dict(payload["state_dict"])
    except RuntimeError as exc:
        raise DataError(path, f"weights do not fit the model ({str(exc)[:300]})",
                        fix="the checkpoint comes from another version of the code") from None
    return model


def check_vectors(path: str | Path, recorded: dict, actual: dict) -> None:
    """Refuse pre-trained vector sources other than those recorded (name and fingerprint of each)."""
    for key in ("word_vectors", "char_vectors"):
        want, have = recorded.get(key), actual.get(key)
        if want is None and have is None:
            continue
        if want is None or have is None or want["fingerprint"] != have["fingerprint"]:
            def show(s):
                return "none" if s is None else f"{s['name']} ({s['words']} words x {s['dim']}, {s['fingerprint'][:12]})"

            raise DataError(path, f"model.{key}: the model was trained with {show(want)}, not {show(have)}",
                            fix=f"set model.{key} to the source it was trained with"
                                + (f" ({want['name']})" if want else " (null)"))


VOCAB_DEPENDENT = ("embed.weight", "out.weight", "out.bias")  # a row per generative-vocabulary token


def init_weights(model: MQAN, path: str | Path) -> list[str]:
    """Start `model` from the weights of the model file `path` (`train.init_from`, resolved by deca.runs).

    Every weight is copied, except that with another generative vocabulary the output layer W_v keeps its
    fresh initialization (the paper's "new softmax" for transfer), and so do the rows of the trained
    generative embeddings of tokens the checkpoint's vocabulary lacks (a token of both keeps its trained
    row; a format-2 checkpoint, which does not carry its tokens, gets fresh embeddings). Returns the names
    of the weights not (or not wholly) copied. A checkpoint of another model configuration or other
    pre-trained vectors is refused.
    """
    path = Path(path)
    payload = read_checkpoint(path)
    check_vectors(path, payload["vectors"], vector_sources(model))
    V = model.generative_size
    tokens = payload.get("vocab_tokens")
    same_vocab = (tokens[:V] == model.vocab.itos[:V] and payload["generative_size"] == V if tokens
                  else payload["vocab_fingerprint"] == model.vocab.fingerprint)
    own, loaded = model.state_dict(), payload["state_dict"]
    replaced = [] if same_vocab else [k for k in VOCAB_DEPENDENT if k in own]
    for name, value in own.items():
        if name not in replaced and (name not in loaded or loaded[name].shape != value.shape):
            got = tuple(loaded[name].shape) if name in loaded else "nothing"
            raise DataError(path, f"cannot start from this model: {name} is {tuple(value.shape)} here, {got} there",
                            fix="use the model.* settings the checkpoint was trained with")
    state = {k: own[k] if k in replaced else loaded[k] for k in own}
    if tokens and "embed.weight" in replaced:
        state["embed.weight"] = _rows_by_token(own["embed.weight"], loaded["embed.weight"], model.vocab.itos[:V],
                                               tokens[:payload["generative_size"]])
    model.load_state_dict(state)
    return replaced


def _rows_by_token(fresh: torch.Tensor, trained: torch.Tensor, new_tokens: list[str], old_tokens: list[str]):
    """`fresh` with the row of every token found in `old_tokens` taken from `trained`."""
    where = {tok: i for i, tok in enumerate(old_tokens[: trained.shape[0]])}
    pairs = [(i, where[tok]) for i, tok in enumerate(new_tokens[: fresh.shape[0]]) if tok in where]
    out = fresh.clone()
    if pairs:
        new_idx, old_idx = map(torch.tensor, zip(*pairs))
        out[new_idx] = trained[old_idx].to(out.dtype)
    return out
