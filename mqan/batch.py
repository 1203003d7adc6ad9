"""From processed rows to padded tensors, with the extended (pointer) vocabulary of the batch.

Every token is identified by its *extended* id: a token of the generative vocabulary keeps its id; any
other token gets a batch-local id ``generative_size + k`` (k in order of first appearance: examples in
order, context, question, then answer), and `Batch.oov_tokens` keeps its string. The model computes a
token's input features from that string (mqan/inputs.py), so a token outside data/vocab.txt keeps its
identity at the input; extended ids are also what the decoder outputs and points to.

Answer targets: a generative token keeps its id; a token outside the generative vocabulary that occurs in
*this example's* context or question takes its batch-local id; anything else is UNK (the original gave it
an OOV slot of probability ~1e-10, or a batch-local id that only another example could point to, which
gives an unbounded loss; the pointer-generator convention is UNK). Decoder inputs are the extended ids of
``<init> a1 .. an`` (an answer-only token keeps its string there too); targets ``a1 .. an <eos>``.

For the S2S and +SAtt baselines the batch also holds the original's concatenation
``tokenize("Context:") + context + tokenize("Question:") + question``. An empty sequence is encoded
as one <pad> token (mask True) so that every attention has something to attend to. `droppable` marks
the context tokens, the only ones word dropout may hide (never the question: it carries the labels and
candidates that the question pointer copies).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Sequence

import torch

from deca.text import tokenize
from mqan.packing import Packing
from mqan.vocab import EOS, EOS_ID, INIT_ID, PAD_ID, SPECIALS, UNK_ID, Vocab

CONTEXT_SPECIAL = tuple(tokenize("Context:"))
QUESTION_SPECIAL = tuple(tokenize("Question:"))


@dataclass
class Sequences:
    """One padded input field. ext/mask/droppable: [B, L]; lengths: [B] (always on the CPU, for packing)."""

    ext: torch.Tensor  # [B, L] long, extended ids (PAD_ID at padding)
    mask: torch.Tensor  # [B, L] bool, True at real tokens
    lengths: torch.Tensor  # [B] long, on the CPU
    droppable: torch.Tensor  # [B, L] bool, True at context tokens (word dropout may hide them)
    _packings: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def to(self, device, non_blocking: bool = False) -> "Sequences":
        return Sequences(self.ext.to(device, non_blocking=non_blocking), self.mask.to(device, non_blocking=non_blocking),
                         self.lengths, self.droppable.to(device, non_blocking=non_blocking))

    def packing(self, device) -> Packing:
        """How the BiLSTMs pack this field on `device` (computed once; every BiLSTM over the field reuses it)."""
        key = str(device)
        if key not in self._packings:
            self._packings[key] = Packing.of(self.lengths, self.ext.shape[1], device)
        return self._packings[key]


@dataclass
class Batch:
    """A collated batch. `size` = examples, `answer_tokens` = non-pad target tokens (incl. <eos>)."""

    context: Sequences
    question: Sequences
    context_question: Sequences  # concatenation, for the s2s / satt baselines
    answer_inputs: torch.Tensor  # [B, T] long, extended ids: <init> a1 .. an, then PAD_ID
    answer_targets: torch.Tensor  # [B, T] long, extended ids: a1 .. an <eos>, then PAD_ID
    answer_mask: torch.Tensor  # [B, T] bool
    answer_index: torch.Tensor  # [N] positions of the real targets in the flattened [B * T] (made on the CPU)
    oov_tokens: list[str]  # extended id generative_size + k  <->  oov_tokens[k]
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
        """A copy on `device` (lengths stay on the CPU); to a GPU from pinned memory, without blocking the host."""
        device = torch.device(device)
        cuda = device.type == "cuda"
        moved = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Sequences):
                v = Sequences(*(t.pin_memory() if cuda else t for t in (v.ext, v.mask, v.lengths, v.droppable)))
                moved[f.name] = v.to(device, non_blocking=cuda)
            elif isinstance(v, torch.Tensor):
                moved[f.name] = (v.pin_memory() if cuda and v.device.type == "cpu" else v).to(device, non_blocking=cuda)
        return replace(self, **moved)

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


def _pad(seqs: list[list[int]], value) -> torch.Tensor:
    width = max(len(s) for s in seqs)
    return torch.tensor([s + [value] * (width - len(s)) for s in seqs])


def _tokens(row: dict, key: str) -> list[str]:
    value = row.get(key)
    return [] if value is None else list(value)


def _sequences(ext: list[list[int]], droppable: list[list[bool]]) -> Sequences:
    lengths = torch.tensor([len(s) for s in ext], dtype=torch.long)
    ids = _pad(ext, PAD_ID).long()
    mask = torch.arange(ids.shape[1])[None, :] < lengths[:, None]
    return Sequences(ids, mask, lengths, _pad(droppable, False).bool())


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
        in_context = [False] * len(CONTEXT_SPECIAL) + [True] * len(c) + [False] * (len(QUESTION_SPECIAL) + len(q))
        for name, toks, drop in (("context", c, [True] * len(c)), ("question", q, [False] * len(q)),
                                 ("context_question", cq, in_context)):
            fields_[name][0].append([ext_id(t) for t in toks] or [PAD_ID])
            fields_[name][1].append(drop or [False])
        local = set(c) | set(q)
        a = _tokens(row, "answer_tokens")
        tgt = []
        for t in a:
            i = vocab.stoi.get(t)
            if i is not None and i < gen:
                tgt.append(i)
            elif t in local:
                tgt.append(oov[t])
            else:
                tgt.append(UNK_ID)
        ans_in.append([INIT_ID] + [ext_id(t) for t in a])
        ans_tgt.append(tgt + [EOS_ID])

    seqs = {name: _sequences(ext, drop) for name, (ext, drop) in fields_.items()}
    targets = _pad(ans_tgt, PAD_ID).long()
    answer_len = torch.tensor([len(t) for t in ans_tgt])
    answer_mask = torch.arange(targets.shape[1])[None, :] < answer_len[:, None]
    batch = Batch(
        context=seqs["context"], question=seqs["question"], context_question=seqs["context_question"],
        answer_inputs=_pad(ans_in, PAD_ID).long(), answer_targets=targets, answer_mask=answer_mask,
        answer_index=answer_mask.flatten().nonzero()[:, 0],
        oov_tokens=list(oov), generative_size=gen,
        ids=[row.get("id") for row in rows], tasks=[row.get("task") for row in rows],
        answer_tokens=int(answer_len.sum()),
    )
    return batch.to(device) if device is not None else batch


__all__ = ["Batch", "Sequences", "collate", "CONTEXT_SPECIAL", "QUESTION_SPECIAL", "EOS"]
