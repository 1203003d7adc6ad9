"""From processed rows to padded tensors, with the extended (pointer) vocabulary of the batch.

Every sequence is kept twice: *full* ids index the input embeddings (any token of data/vocab.txt;
UNK for a token outside it), *extended* ids are what the decoder outputs and points to. A token in
the generative vocabulary keeps its id; any other context or question token gets a batch-local id
``generative_size + k`` (k in order of first appearance: examples in order, context then question),
so that it can be copied and mapped back to its string (`Batch.oov_tokens`).

Answer targets are extended ids: a generative token keeps its id; a token outside the generative
vocabulary that occurs in *this example's* context or question takes its batch-local id; anything
else is UNK (the original gave it an OOV slot of probability ~1e-10, or a batch-local id that only
another example could point to, which gives an unbounded loss; the pointer-generator convention is
UNK). Decoder inputs are full ids: ``<init> a1 .. an``; targets ``a1 .. an <eos>``.

For the S2S and +SAtt baselines the batch also holds the original's concatenation
``tokenize("Context:") + context + tokenize("Question:") + question``. An empty sequence is encoded
as one <pad> token (mask True) so that every attention has something to attend to.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Sequence

import torch

from deca.text import detokenize, tokenize
from train.vocab import EOS, EOS_ID, INIT_ID, PAD_ID, SPECIALS, UNK_ID, Vocab

CONTEXT_SPECIAL = tuple(tokenize("Context:"))
QUESTION_SPECIAL = tuple(tokenize("Question:"))


@dataclass
class Sequences:
    """One padded input field. ids/ext/mask: [B, L]; lengths: [B] (always on the CPU, for packing)."""

    ids: torch.Tensor  # [B, L] long, full-vocabulary ids (PAD_ID at padding)
    ext: torch.Tensor  # [B, L] long, extended ids (PAD_ID at padding)
    mask: torch.Tensor  # [B, L] bool, True at real tokens
    lengths: torch.Tensor  # [B] long, on the CPU

    def to(self, device) -> "Sequences":
        return Sequences(self.ids.to(device), self.ext.to(device), self.mask.to(device), self.lengths)


@dataclass
class Batch:
    """A collated batch. `size` = examples, `answer_tokens` = non-pad target tokens (incl. <eos>)."""

    context: Sequences
    question: Sequences
    context_question: Sequences  # concatenation, for the s2s / satt baselines
    answer_inputs: torch.Tensor  # [B, T] long, full ids: <init> a1 .. an, then PAD_ID
    answer_targets: torch.Tensor  # [B, T] long, extended ids: a1 .. an <eos>, then PAD_ID
    answer_mask: torch.Tensor  # [B, T] bool
    oov_tokens: list[str]  # extended id generative_size + k  <->  oov_tokens[k]
    oov_full_ids: torch.Tensor  # [n_oov] long, full-vocabulary id of each oov token (UNK_ID if none)
    generative_size: int
    ids: list[Any]  # example ids
    tasks: list[Any]
    answer_tokens: int  # number of non-pad answer targets

    @property
    def size(self) -> int:
        return self.answer_targets.shape[0]

    @property
    def extended_size(self) -> int:
        """Size of this batch's output distribution: generative vocabulary + batch-local tokens."""
        return self.generative_size + len(self.oov_tokens)

    def to(self, device) -> "Batch":
        """A copy on `device` (lengths stay on the CPU)."""
        moved = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (torch.Tensor, Sequences)):
                moved[f.name] = v.to(device)
        return replace(self, **moved)

    def ext_to_full(self, ext: torch.Tensor) -> torch.Tensor:
        """Extended ids -> full-vocabulary ids (for decoder inputs), same shape."""
        oov = ext - self.generative_size
        if len(self.oov_tokens) == 0:
            return ext
        mapped = self.oov_full_ids.to(ext.device)[oov.clamp(0, len(self.oov_tokens) - 1)]
        return torch.where(oov >= 0, mapped, ext)

    def ext_to_tokens(self, ext: Sequence[int], vocab: Vocab, stop_at_eos: bool = True) -> list[str]:
        """Strings of extended ids: cut at the first <eos>; <pad>/<init>/<eos> dropped (UNK kept)."""
        out = []
        for i in ext:
            i = int(i)
            if i == EOS_ID and stop_at_eos:
                break
            if i >= self.generative_size:
                out.append(self.oov_tokens[i - self.generative_size])
            elif i == UNK_ID or i >= len(SPECIALS):
                out.append(vocab.itos[i])
        return out


def _pad(seqs: list[list[int]], value: int) -> torch.Tensor:
    width = max(len(s) for s in seqs)
    return torch.tensor([s + [value] * (width - len(s)) for s in seqs], dtype=torch.long)


def _tokens(row: dict, key: str) -> list[str]:
    value = row.get(key)
    return [] if value is None else list(value)


def collate(rows: list[dict], vocab: Vocab, device=None) -> Batch:
    """Collate rows of the processed schema (context_tokens, question_tokens, answer_tokens).

    Missing/None answer_tokens count as an empty answer (target: just <eos>).
    """
    if not rows:
        raise ValueError("collate: empty list of rows")
    gen = vocab.generative_size
    oov: dict[str, int] = {}

    def ext_id(tok: str) -> int:
        i = vocab.stoi.get(tok)
        if i is not None and i < gen:
            return i
        if tok not in oov:
            oov[tok] = gen + len(oov)
        return oov[tok]

    fields_ = {"context": ([], []), "question": ([], []), "context_question": ([], [])}
    ans_in, ans_tgt = [], []
    for row in rows:
        c, q = _tokens(row, "context_tokens"), _tokens(row, "question_tokens")
        cq = [*CONTEXT_SPECIAL, *c, *QUESTION_SPECIAL, *q]
        for name, toks in (("context", c), ("question", q), ("context_question", cq)):
            full = [vocab.id(t) for t in toks] or [PAD_ID]
            ext = [ext_id(t) for t in toks] or [PAD_ID]
            fields_[name][0].append(full)
            fields_[name][1].append(ext)
        local = set(c) | set(q)
        a = _tokens(row, "answer_tokens")
        ans_in.append([INIT_ID] + [vocab.id(t) for t in a])
        tgt = []
        for t in a:
            i = vocab.stoi.get(t)
            if i is not None and i < gen:
                tgt.append(i)
            elif t in local:
                tgt.append(oov[t])
            else:
                tgt.append(UNK_ID)
        ans_tgt.append(tgt + [EOS_ID])

    seqs = {}
    for name, (full, ext) in fields_.items():
        lengths = torch.tensor([len(s) for s in full], dtype=torch.long)
        ids = _pad(full, PAD_ID)
        mask = torch.arange(ids.shape[1])[None, :] < lengths[:, None]
        seqs[name] = Sequences(ids, _pad(ext, PAD_ID), mask, lengths)
    targets = _pad(ans_tgt, PAD_ID)
    answer_len = torch.tensor([len(t) for t in ans_tgt])
    answer_mask = torch.arange(targets.shape[1])[None, :] < answer_len[:, None]
    oov_tokens = list(oov)
    batch = Batch(
        context=seqs["context"], question=seqs["question"], context_question=seqs["context_question"],
        answer_inputs=_pad(ans_in, PAD_ID), answer_targets=targets, answer_mask=answer_mask,
        oov_tokens=oov_tokens,
        oov_full_ids=torch.tensor([vocab.id(t) for t in oov_tokens], dtype=torch.long),
        generative_size=gen,
        ids=[row.get("id") for row in rows], tasks=[row.get("task") for row in rows],
        answer_tokens=int(answer_len.sum()),
    )
    return batch.to(device) if device is not None else batch


def detokenize_tokens(tokens: list[str]) -> str:
    """Answer text of decoded tokens (revtok detokenization; the data is already lowercased)."""
    return detokenize(tokens) if tokens else ""


__all__ = ["Batch", "Sequences", "collate", "detokenize_tokens", "CONTEXT_SPECIAL", "QUESTION_SPECIAL", "EOS"]
