"""Greedy decoding of many examples: the one batched loop that validation, `deca evaluate`, `deca predict`,
`deca serve` and the experiments share.

Rows (processed examples: ``context_tokens``, ``question_tokens``, ``id``) are sorted by length (context +
question tokens, ties by position, as a stable sort) and cut into batches of `batch_size`, so a batch
holds examples of similar length and little padding. Each batch is one call of `MQAN.greedy`. Across
workers, worker `rank` of `world` decodes every `world`-th batch (`part=(rank, world)`).

An answer can say, for every token it chose, which source gave it: the vocabulary (the generative
softmax), the context pointer or the question pointer, with the three source weights of Eq. 12-13
(gamma, (1-gamma) lambda, (1-gamma)(1-lambda); they sum to 1) and each source's share of the token's
probability.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from contextlib import contextmanager
from typing import Generator, Iterator, Sequence

import torch

from mqan.batch import collate
from mqan.precision import autocast, quantized
from mqan.vocab import EOS_ID, INIT_ID, PAD_ID

SOURCES = ("vocabulary", "context", "question")


@dataclass
class Answer:
    """One decoded answer, token by token."""

    text: str
    tokens: list[str] = field(default_factory=list)
    weights: list[list[float]] = field(default_factory=list)  # per token: the three source weights
    shares: list[list[float]] = field(default_factory=list)  # per token: p(token) from each source

    def to_json(self, request_id: str | None = None) -> dict:
        """The JSON line `deca predict` writes."""
        steps = [{"token": tok.strip(), "source": SOURCES[max(range(3), key=share.__getitem__)],
                  "weights": dict(zip(SOURCES, (round(w, 6) for w in weights))),
                  "probability": round(sum(share), 6)}
                 for tok, weights, share in zip(self.tokens, self.weights, self.shares)]
        return {**({"id": request_id} if request_id is not None else {}), "answer": self.text, "tokens": steps}


def length_batches(rows: Sequence[dict], batch_size: int) -> list[list[int]]:
    """Row indices sorted by context + question length (stable), in batches of `batch_size`."""
    order = sorted(range(len(rows)),
                   key=lambda i: (len(rows[i]["context_tokens"]) + len(rows[i]["question_tokens"]), i))
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def iter_answers(model, vocab, rows: Sequence[dict], batch_size: int, max_len: int | None, device, *,
                 part: tuple[int, int] = (0, 1), explain: bool = False, weights: bool = False,
                 precision: str = "fp32", cuda_graphs: bool = False) -> Iterator[tuple[list[int], list[Answer]]]:
    """(row indices, their answers) batch by batch, for this worker's `part` = (rank, world) of the batches.

    `explain`: each token's source weights and each source's probability of it (Answer.weights, .shares);
    `weights`: the source weights only, which greedy decoding computes anyway (nothing more is computed);
    `precision`: fp32, bf16 (autocast) or int8 (W_v quantized), as mqan/precision.py resolved it;
    `cuda_graphs`: on a GPU, each decoding step replayed from a CUDA graph (MQAN.greedy)."""
    rank, world = part
    device = torch.device(device)
    if precision == "int8":
        model = quantized(model)
    with decoding(device, precision):
        for idx in length_batches(rows, batch_size)[rank::world]:
            out = model.greedy(collate([rows[i] for i in idx], vocab, device), max_len, explain=explain,
                               cuda_graphs=cuda_graphs)
            yield idx, _answers(out, len(idx), explain, weights)


@contextmanager
def decoding(device, precision: str = "fp32"):
    """What decoding runs under: inference mode, and autocast for bf16."""
    with torch.inference_mode(), autocast(torch.device(device), precision):
        yield


def answer_steps(model, vocab, rows: Sequence[dict], max_len: int | None, device, *, explain: bool = False,
                 precision: str = "fp32") -> Generator[None, None, list[Answer]]:
    """The answers of `rows` decoded as one batch, step by step: a generator that yields after the encoder and
    after each greedy step (MQAN.greedy_steps) and returns the answers in the rows' order. Its caller runs each
    step under `decoding(device, precision)`, and may run other batches between steps."""
    device = torch.device(device)
    if precision == "int8":
        model = quantized(model)
    idx = length_batches(rows, len(rows))[0] if rows else []
    out = yield from model.greedy_steps(collate([rows[i] for i in idx], vocab, device), max_len, explain=explain)
    answers: list[Answer | None] = [None] * len(rows)
    for i, answer in zip(idx, _answers(out, len(idx), explain)):
        answers[i] = answer
    return answers  # type: ignore[return-value]


def _answers(out, n: int, explain: bool, weights: bool = False) -> list[Answer]:
    """The `n` answers of a greedy output (copied to the CPU once per batch, not once per answer)."""
    if explain or weights:
        out = dataclasses.replace(out, ids=out.ids.cpu(), lengths=out.lengths.cpu(),
                                  source_weights=out.source_weights.cpu(),
                                  contributions=out.contributions.cpu() if explain else None)
    return [_answer(out, j, explain, weights) for j in range(n)]


def decode(model, vocab, rows: Sequence[dict], batch_size: int, max_len: int | None, device, *,
           bar=None, explain: bool = False, weights: bool = False, precision: str = "fp32",
           cuda_graphs: bool = False) -> list[Answer]:
    """Greedy answers for all `rows`, in their order (see `iter_answers`); `bar` (tqdm) counts examples."""
    answers: list[Answer | None] = [None] * len(rows)
    for idx, batch_answers in iter_answers(model, vocab, rows, batch_size, max_len, device,
                                           explain=explain, weights=weights, precision=precision,
                                           cuda_graphs=cuda_graphs):
        for i, answer in zip(idx, batch_answers):
            answers[i] = answer
        if bar is not None:
            bar.update(len(idx))
    return answers  # type: ignore[return-value]


def _answer(out, j: int, explain: bool, weights: bool = False) -> Answer:
    text = out.texts[j].lower()
    if not (explain or weights):
        return Answer(text)
    ids = out.ids[j, : int(out.lengths[j])].tolist()
    steps = [s for s, i in enumerate(ids) if i not in (PAD_ID, INIT_ID, EOS_ID)]  # the steps of out.tokens[j]
    shares = out.contributions[j, steps].tolist() if explain else []
    return Answer(text, out.tokens[j], out.source_weights[j, steps].tolist(), shares)
