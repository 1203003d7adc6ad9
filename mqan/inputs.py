"""How a token reaches the model: features computed from its string, never from a vocabulary id.

The input of a token is the concatenation (paper Appendix D, plus trainable parts that are not in it):

    [ char n-gram vectors from a JMT file (frozen) ; trained char n-gram vectors (hashed) ;
      word vector from a pre-trained source (frozen) ; trained word vector (generative vocabulary only) ]

each part present when configured (`model.char_vectors`, `model.char_ngram_dim`, `model.word_vectors`,
`model.embedding_dim`). Every token keeps its identity: one with a pre-trained vector gets it, whether it
is in data/vocab.txt or first met at prediction time, and every token gets its own char n-gram features.
Only the *trained* word vectors are limited to the generative vocabulary (any other token shares the UNK
row there), because a trained vector of a word seen a handful of times is noise.

Where this follows the original rather than the paper: vectors are looked up by ``token.strip()``, a
token without a vector gets zeros, and the char n-gram vector of a token is the mean of its 2/3/4-gram
vectors over ``#BEGIN#`` + characters + ``#END#`` (torchtext's CharNGram). The original extended its
input vocabulary with the evaluation splits' words before predicting; here any string gets its features.

Ids: the model sees tokens by their *extended* id of the batch (mqan/batch.py): ids below the generative
size V are vocabulary tokens, whose features are computed once (`InputEmbedding` buffers); ids from V
are the batch's own tokens (`Batch.oov_tokens`), featurized per batch from their strings.
"""
from __future__ import annotations

import zlib
from typing import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from mqan import syncs
from mqan.vectors import VectorSource
from mqan.vocab import SPECIALS, UNK_ID

NGRAMS = (2, 3, 4)
MAX_GRAMS = 48  # per token: 2-grams come first, so a very long token keeps its prefix/suffix pairs


def char_ngrams(token: str) -> list[str]:
    """The JMT keys of a (stripped) token: ``2gram-#BEGIN#a``, ``2gram-ab``, ..., ``4gram-...#END#``."""
    chars = ["#BEGIN#", *token, "#END#"]
    return [f"{n}gram-{''.join(chars[i:i + n])}" for n in NGRAMS for i in range(len(chars) - n + 1)]


class Featurizer:
    """Token strings -> frozen features ([char file ; word vectors], float32) and hashed char n-gram ids.

    Specials get zero frozen features and no n-grams. The n-gram ids of a token are memoized (bounded); frozen
    features are read from the memory-mapped sources each time.
    """

    def __init__(self, word: VectorSource | None = None, char: VectorSource | None = None, buckets: int = 0,
                 memo_size: int = 500_000):
        self.word, self.char, self.buckets = word, char, buckets
        self.frozen_dim = (char.dim if char else 0) + (word.dim if word else 0)
        self._memo: dict[str, tuple[np.ndarray | None, list[int]]] = {}
        self._memo_size = memo_size

    def frozen(self, tokens: Sequence[str]) -> np.ndarray:
        """[n, frozen_dim] float32 (zeros for specials and tokens without vectors)."""
        out = np.zeros((len(tokens), self.frozen_dim), dtype=np.float32)
        if not self.frozen_dim:
            return out
        keys = [t.strip() for t in tokens]
        real = np.array([t not in SPECIALS for t in tokens], dtype=bool)
        col = 0
        if self.char is not None:
            out[:, : self.char.dim] = self._char_means(keys)
            col = self.char.dim
        if self.word is not None:
            out[:, col:] = self.word.lookup(keys)
        out[~real] = 0.0
        return out

    def _char_means(self, keys: Sequence[str]) -> np.ndarray:
        grams = [char_ngrams(k) for k in keys]
        rows = self.char.rows([g for gs in grams for g in gs])
        out = np.zeros((len(keys), self.char.dim), dtype=np.float32)
        start = 0
        for i, gs in enumerate(grams):
            r = rows[start:start + len(gs)]
            start += len(gs)
            r = r[r >= 0]
            if len(r):
                out[i] = self.char.matrix[r].mean(axis=0)
        return out

    def grams(self, tokens: Sequence[str]) -> np.ndarray:
        """[n, MAX_GRAMS] int64 bucket ids (crc32 of each JMT key mod buckets), padded with `buckets`."""
        out = np.full((len(tokens), MAX_GRAMS), self.buckets, dtype=np.int64)
        for i, t in enumerate(tokens):
            ids = self._memo.get(t)
            if ids is None:
                ids = [] if t in SPECIALS else [zlib.crc32(k.encode("utf-8")) % self.buckets
                                                for k in char_ngrams(t.strip())][:MAX_GRAMS]
                if len(self._memo) < self._memo_size:
                    self._memo[t] = ids
            out[i, : len(ids)] = ids
        return out


def _gather(gen: torch.Tensor, oov: torch.Tensor | None, ids: torch.Tensor) -> torch.Tensor:
    """Rows of the virtual table [gen ; oov] at `ids` ([U]) without concatenating the tables.

    On a GPU both tables are read and the rows chosen with `where`: the same rows, without the host
    synchronisation that `all()` and boolean indexing cost there."""
    V = gen.shape[0]
    if oov is None:
        return gen[ids.clamp(max=V - 1)]
    is_gen = ids < V
    if syncs.avoid(ids):
        return torch.where(is_gen[:, None], gen[ids.clamp(max=V - 1)], oov[(ids - V).clamp(0, oov.shape[0] - 1)])
    if bool(is_gen.all()):
        return gen[ids]
    out = gen.new_empty(ids.shape[0], gen.shape[1])
    out[is_gen] = gen[ids[is_gen]]
    out[~is_gen] = oov[ids[~is_gen] - V]
    return out


class InputEmbedding(nn.Module):
    """Input features of extended ids ([B, L] -> [B, L, dim]); see the module docstring for the parts.

    Trained parameters: `weight` ([V, trained_dim], the generative vocabulary) and `char` ([buckets + 1,
    char_dim], the hashed n-grams; the last row is padding). Frozen features and n-gram ids of the
    generative vocabulary are buffers rebuilt from the strings (not saved in checkpoints).
    Trained vectors start small (N(0, init_std^2)): Adam moves every coordinate by about the learning
    rate per step, so from N(0, 1) they stay near their random start for hundreds of steps and the model
    sits at the constant answer; from 0.01 the learned direction dominates within a few steps.
    """

    def __init__(self, itos: Sequence[str], generative_size: int, featurizer: Featurizer, trained_dim: int = 0,
                 char_dim: int = 0, init_std: float = 0.01):
        super().__init__()
        self.featurizer, self.V = featurizer, generative_size
        gen = list(itos[:generative_size])
        self.frozen_dim = featurizer.frozen_dim
        if self.frozen_dim:
            self.register_buffer("gen_frozen", torch.from_numpy(featurizer.frozen(gen)), persistent=False)
        self.weight = nn.Parameter(torch.randn(generative_size, trained_dim) * init_std) if trained_dim else None
        self.char = None
        if char_dim:
            if featurizer.buckets < 1:
                raise ValueError("trained char n-gram vectors need model.char_ngram_buckets >= 1")
            self.register_buffer("gen_grams", torch.from_numpy(featurizer.grams(gen)), persistent=False)
            self.char = nn.Parameter(torch.randn(featurizer.buckets + 1, char_dim) * init_std)
        self.dim = self.frozen_dim + char_dim + trained_dim
        if self.dim == 0:
            raise ValueError("the model has no input features: set model.word_vectors, model.char_vectors, "
                             "model.char_ngram_dim or model.embedding_dim")

    def batch_features(self, oov_tokens: Sequence[str], device) -> dict[str, torch.Tensor]:
        """Features of a batch's own tokens (extended ids V, V+1, ...), computed from their strings."""
        extra: dict[str, torch.Tensor] = {}
        if not oov_tokens:
            return extra
        if self.frozen_dim:
            extra["frozen"] = torch.from_numpy(self.featurizer.frozen(oov_tokens)).to(device)
        if self.char is not None:
            extra["grams"] = torch.from_numpy(self.featurizer.grams(oov_tokens)).to(device)
        return extra

    def features(self, ids: torch.Tensor, extra: dict[str, torch.Tensor]) -> torch.Tensor:
        """[U, dim] features of extended ids [U]: [frozen ; trained char n-grams ; trained word vector]."""
        parts = []
        if self.frozen_dim:
            parts.append(_gather(self.gen_frozen, extra.get("frozen"), ids))
        if self.char is not None:
            grams = _gather(self.gen_grams, extra.get("grams"), ids)
            parts.append(F.embedding_bag(grams, self.char, mode="mean", padding_idx=self.featurizer.buckets))
        if self.weight is not None:
            parts.append(F.embedding(ids.masked_fill(ids >= self.V, UNK_ID), self.weight))
        return torch.cat(parts, -1) if len(parts) > 1 else parts[0]

    def forward(self, ids: torch.Tensor, extra: dict[str, torch.Tensor]) -> torch.Tensor:
        """ids [B, L] extended ids -> [B, L, dim]. On the CPU each distinct id is featurized once; on a GPU
        every position is (`unique` would wait for the device to learn how many ids there are)."""
        if syncs.avoid(ids):
            return self.features(ids.reshape(-1), extra).view(*ids.shape, self.dim)
        uniq, inverse = torch.unique(ids, return_inverse=True)
        return self.features(uniq, extra)[inverse]
