"""The decoding interface of MQAN (mqan/model.py): what the encoder gives the decoder, what one decoding step
gives back, and the `Decoder` protocol that the greedy loops (mqan/greedy.py: eager, and the `steps` generator
that `deca serve` drives; mqan/static_decode.py: static shapes for CUDA graphs) decode with.

A decoder is the encoder once (`encode`), then one public step (`decode_step`) per answer token over a
fixed-size cache of the decoder layers' keys and values (`new_cache`, mqan/layers.py's KVCache). Teacher
forcing (`MQAN.token_log_probs`, the loss) runs the same pieces (`answer_features`, `recurrent_step`) over the
gold answer. The loops depend on this module only, so the model may call them without an import circle.

Shapes: B batch, L context, M question, d dimension, V generative vocabulary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from mqan import mixture
from mqan.batch import Batch
from mqan.layers import KVCache
from mqan.vocab import Vocab


@dataclass
class Encoded:
    context: torch.Tensor  # [B, L, d] C_fin (for s2s/satt: of the concatenation)
    context_mask: torch.Tensor  # [B, L]
    context_ext: torch.Tensor  # [B, L] extended ids (pointer targets)
    question: torch.Tensor | None  # [B, M, d] Q_fin (question pointer only)
    question_mask: torch.Tensor | None
    question_ext: torch.Tensor | None
    state: tuple[torch.Tensor, torch.Tensor]  # decoder LSTM initial (h, c), each [layers, B, d]
    features: dict[str, torch.Tensor]  # input features of the batch's own tokens (InputEmbedding.batch_features)


@dataclass
class Attended:
    """The decoder at some answer positions (leading shape [...]: [B] for one step, [B, T] for teacher
    forcing, [N] once the real positions are selected)."""
    x: torch.Tensor  # [..., d] A_self (A_proj for s2s): the LSTM's input
    h: torch.Tensor  # [..., d] h_t, Eq. 7
    context: torch.Tensor  # [..., d] c~_t, Eq. 9
    log_context: torch.Tensor  # [..., L] log a^C_t, Eq. 8
    question: torch.Tensor | None = None  # [..., d] q~_t, Eq. 10 (question pointer only)
    log_question: torch.Tensor | None = None  # [..., M] log a^Q_t


@dataclass
class Step:
    """One decoding step's outputs: the three sources of the output distribution (Eq. 13) and the recurrent
    state the next step continues from."""
    attended: Attended  # leading shape [B]
    state: tuple[torch.Tensor, torch.Tensor]  # the decoder LSTM's (h, c), each [layers, B, d]
    p_vocab: torch.Tensor  # [B, V] softmax(W_v c~_t) (Eq. 11), fp32 under bf16 autocast too
    weights: torch.Tensor  # [B, 3] gamma, (1 - gamma) lambda, (1 - gamma)(1 - lambda) (Eqs. 12-13)
    pointers: mixture.Pointers  # log a^C_t [B, L] / log a^Q_t [B, M] and their extended ids

    @property
    def context(self) -> torch.Tensor:
        """c~_t [B, d]: fed back to the next step (Eq. 7)."""
        return self.attended.context


class Decoder(Protocol):
    """What a greedy loop needs of the model (MQAN, mqan/model.py)."""

    vocab: Vocab

    @property
    def self_attentive(self) -> bool:
        """The decoder has self-attentive layers (their keys/values are cached; without them, s2s, a step
        reads the previous token only)."""

    def encode(self, batch: Batch) -> Encoded:
        """The encoder, once per batch."""

    def new_cache(self, capacity: int, static: bool = False, device=None) -> KVCache:
        """An empty cache of `capacity` positions for the decoder layers (`static`: for CUDA graphs)."""

    def decode_step(self, enc: Encoded, inputs: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor],
                    ctx_prev: torch.Tensor, cache: KVCache | None) -> Step:
        """One step: the decoder's inputs (extended ids [B, T]: the previous token, T = 1, continuing the
        prefix in `cache`; or the whole prefix without a cache) -> the next position's output sources."""
