"""Model checkpoints: weights, model config and the vocabulary fingerprint in one torch file.

Loading uses ``torch.load(weights_only=True)`` (no pickled code runs) and refuses a vocabulary whose
fingerprint differs from the one the model was trained with. A frozen embedding table is *not*
stored (GloVe + char n-grams over a large vocabulary is over a gigabyte): it is rebuilt from the
vector files named in the model config, or passed in, and must match the stored table fingerprint.
Files are written to a temporary name and renamed, so a crash never leaves half a checkpoint.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import torch

from deca.config import ModelConfig, from_dict
from deca.errors import ConfigError, DataError
from train.model import MQAN, build_model
from train.vocab import Vocab

FORMAT = "deca-mqan/1"


def save_checkpoint(path: str | Path, model: MQAN, extra: dict[str, Any] | None = None) -> Path:
    """Write `model` (and `extra`: tensors, numbers, strings, lists, dicts, e.g. an optimizer state) to `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": FORMAT,
        "model_config": dataclasses.asdict(model.cfg),
        "vocab_fingerprint": model.vocab.fingerprint,
        "vocab_size": len(model.vocab),
        "generative_size": model.generative_size,
        "embedding": {"frozen": model.embed.frozen, "dim": model.embed.dim,
                      "fingerprint": model.embed.fingerprint},
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "extra": extra or {},
    }
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def read_checkpoint(path: str | Path, map_location="cpu") -> dict[str, Any]:
    """The raw payload (weights_only loading); a DataError names the file if it is not a checkpoint."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "checkpoint not found", fix="check the path (train writes them under train.storage_dir)")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # truncated file, foreign pickle (weights_only refuses code), ...
        raise DataError(path, f"cannot load as a checkpoint ({type(exc).__name__}: {str(exc)[:200]})",
                        fix="use a checkpoint written by `deca train` (train/checkpoint.py)") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise DataError(path, f"not a {FORMAT} checkpoint", fix="use a checkpoint written by train/checkpoint.py")
    return payload


def load_checkpoint(path: str | Path, vocab: Vocab, embeddings: torch.Tensor | None = None,
                    map_location="cpu", progress: bool = False) -> tuple[MQAN, dict[str, Any]]:
    """Rebuild the model of a checkpoint for `vocab`; returns (model, extra).

    Refuses (DataError) a vocabulary with another fingerprint, or frozen embeddings other than the
    training ones. `embeddings` overrides reading the vector files named in the stored config.
    """
    path = Path(path)
    payload = read_checkpoint(path, map_location)
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
    emb = payload["embedding"]
    if emb["frozen"] and embeddings is None and not (cfg.word_vectors or cfg.char_vectors):
        raise DataError(path, "the model used a frozen embedding table that is not stored and no vector file is "
                              "named in its config", fix="pass the embedding table to load_checkpoint(embeddings=...)")
    if not emb["frozen"]:
        embeddings = None
    model = build_model(cfg, vocab, embeddings, progress=progress)
    if model.embed.fingerprint != emb["fingerprint"]:
        raise DataError(path, "the embedding vectors differ from the ones the model was trained with",
                        fix=f"use the vector files it was trained with ({cfg.char_vectors}, {cfg.word_vectors})")
    try:
        model.load_state_dict(payload["state_dict"])
    except RuntimeError as exc:
        raise DataError(path, f"weights do not fit the model ({str(exc)[:300]})",
                        fix="the checkpoint comes from another version of the code") from None
    return model, payload["extra"]
