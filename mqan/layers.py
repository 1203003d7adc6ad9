"""Building blocks of MQAN (paper Appendix E): BiLSTMs, dual coattention, multi-head attention,
self-attentive encoder and decoder layers (with incremental state), positional encodings, and the
encoder arm that stacks them (compression BiLSTM, self-attention, final BiLSTM).

Shapes: B batch, L / M context / question length, T answer length, d model dimension,
H heads, k head size. Masks are bool, True at real tokens (torch's SDPA convention: True = attend).
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

from deca.config import ModelConfig
from mqan.batch import Sequences
from mqan import packing as packing_module
from mqan import unpacked
from mqan import cpu_routes
from mqan.cpu_routes import Dropout
from mqan.packing import Packing


class BiLSTM(nn.Module):
    """Bidirectional LSTM over padded sequences (packed, so padding never reaches real positions).

    Dropout on the input (paper App. D: "dropout on inputs to LSTMs"). Output [B, L, d_out] (zeros
    at padding) and the final (h, c), each [layers, B, d_out] (forward and backward concatenated).
    A batch whose rows all have length L runs unpacked (mqan/packing.py), rows of different lengths packed or
    one direction at a time (mqan/unpacked.py): the same result.
    """

    def __init__(self, d_in: int, d_out: int, layers: int = 1, dropout: float = 0.0):
        super().__init__()
        if d_out % 2:
            raise ValueError(f"BiLSTM output size must be even, got {d_out}")
        self.drop = Dropout(dropout)
        self.rnn = nn.LSTM(d_in, d_out // 2, num_layers=layers, bidirectional=True, batch_first=True,
                           dropout=dropout if layers > 1 else 0.0)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | Packing, final_state: bool = True):
        """x [B, L, d_in]; `lengths` [B] (CPU) or their `Packing` (computed once per batch field). Without
        `final_state` (the caller discards it) the state returned may be None. Rows of different lengths run
        packed or, where measured faster, unpacked one direction at a time (mqan/unpacked.py): the same results."""
        B, L, _ = x.shape
        packing = lengths if isinstance(lengths, Packing) else Packing.of(lengths, L, x.device)
        route = "padded" if packing.equal and packing_module.run_unpacked(x) else unpacked.path(
            x, packing, final_state, self.rnn.num_layers)
        if route == "padded":
            out, (h, c) = self.rnn(self.drop(x))  # [B, L, d_out]
        elif route == "directions":
            return unpacked.directions(self.rnn, self.drop(x), packing), None
        elif route == "staircase":
            out, (h, c) = unpacked.staircase(self.rnn, self.drop(x), packing)
        else:
            rnn = self.rnn  # the zero initial state given, not read from batch_sizes[0] (.item())
            h0 = x.new_zeros(rnn.num_layers * 2, B, rnn.hidden_size)
            packed, (h, c) = rnn(packing.pack(self.drop(x)), (h0, h0))
            out = packing.unpack(packed)  # [B, L, d_out]

        def merge(s):  # [layers*2, B, d/2] -> [layers, B, d]
            return s.view(-1, 2, B, s.shape[-1]).transpose(1, 2).reshape(-1, B, 2 * s.shape[-1])

        return out, (merge(h), merge(c))


def masked_fill_value(dtype: torch.dtype) -> float:
    """Score for masked positions: the most negative finite value (exp -> 0, never NaN like -inf rows)."""
    return torch.finfo(dtype).min


class Coattention(nn.Module):
    """Dual coattention with dummy (sentinel) embeddings, Eqs. 17-19 (no parameters but the sentinels).

    Returns, for the context (per context position) Q_sum and C_coa [B, L, d], and for the question
    C_sum and Q_coa [B, M, d]; the sentinel rows are dropped.
    """

    def __init__(self, d: int):
        super().__init__()
        self.sentinels = nn.Parameter(torch.randn(2, d) * d ** -0.5)  # context, question

    def forward(self, c: torch.Tensor, q: torch.Tensor, c_mask: torch.Tensor, q_mask: torch.Tensor):
        B = c.shape[0]
        C = torch.cat([self.sentinels[0].expand(B, 1, -1), c], 1)  # [B, L+1, d]
        Q = torch.cat([self.sentinels[1].expand(B, 1, -1), q], 1)  # [B, M+1, d]
        ones = c_mask.new_ones(B, 1)
        cm, qm = torch.cat([ones, c_mask], 1), torch.cat([ones, q_mask], 1)
        A = C @ Q.transpose(1, 2)  # [B, L+1, M+1] dot-product affinities
        neg = masked_fill_value(A.dtype)
        S_cq = A.masked_fill(~cm[:, :, None], neg).softmax(dim=1)  # each column: distribution over context
        S_qcT = A.masked_fill(~qm[:, None, :], neg).softmax(dim=2)  # each row: distribution over question
        C_sum = S_cq.transpose(1, 2) @ C  # [B, M+1, d]  Eq. 18
        Q_sum = S_qcT @ Q  # [B, L+1, d]
        C_coa = S_qcT @ C_sum  # [B, L+1, d]  Eq. 19
        Q_coa = S_cq.transpose(1, 2) @ Q_sum  # [B, M+1, d]
        return Q_sum[:, 1:], C_coa[:, 1:], C_sum[:, 1:], Q_coa[:, 1:]


class MultiHead(nn.Module):
    """MultiHead(X, Y, Z) = [h_1; ...; h_p] W_o, h_j = Attention(X W_j^X, Y W_j^Y, Z W_j^Z) (Eqs. 22-23).

    Each W_j projects to `head_dim` (the paper: d, "all linear transformations ... project to d"),
    scores are scaled by 1/sqrt(head_dim) (Eq. 22's sqrt(d)), dropout on the attention weights
    ("before multiplying by Z"). No biases: the paper's projections are plain matrices.
    """

    def __init__(self, d: int, heads: int, head_dim: int, dropout: float):
        super().__init__()
        self.h, self.k, self.p = heads, head_dim, dropout
        self.wx = nn.Linear(d, heads * head_dim, bias=False)
        self.wy = nn.Linear(d, heads * head_dim, bias=False)
        self.wz = nn.Linear(d, heads * head_dim, bias=False)
        self.wo = nn.Linear(heads * head_dim, d, bias=False)

    def _split(self, x: torch.Tensor) -> torch.Tensor:  # [B, L, H*k] -> [B, H, L, k]
        return x.view(x.shape[0], x.shape[1], self.h, self.k).transpose(1, 2)

    def keys_values(self, y: torch.Tensor, z: torch.Tensor | None = None):
        """Projected keys and values, each [B, H, L, k] (cacheable: they depend only on Y, Z)."""
        return self._split(self.wy(y)), self._split(self.wz(y if z is None else z))

    def forward(self, x: torch.Tensor, kv, mask: torch.Tensor | None = None) -> torch.Tensor:
        """x [B, Lx, d] attends to kv=(keys, values) [B, H, Ly, k]; mask broadcastable to [B, H, Lx, Ly]."""
        q = self._split(self.wx(x))
        out = cpu_routes.attention(q, kv[0], kv[1], mask, self.p if self.training else 0.0)  # [B, H, Lx, k]
        return self.wo(out.transpose(1, 2).reshape(x.shape[0], x.shape[1], self.h * self.k))

    def attend_one(self, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """`forward` for one query position over unprojected keys = values = y (decoding over C_fin, eval only).

        x [B, 1, d], y [B, L, d], mask [B, L]. The same attention with the products regrouped: the query is
        mapped back into y's space, (x W_j^X)(y W_j^Y)^T = ((x W_j^X) W_j^Y^T) y^T, and the values are projected
        after the weighted sum, sum_l a_l (y_l W_j^Z) = (sum_l a_l y_l) W_j^Z. Each step then reads y [B, L, d]
        twice instead of cached keys and values of [B, H, L, head_dim] each (six times as much memory traffic
        with three heads of d).
        """
        B, d = x.shape[0], x.shape[-1]
        q = self.wx(x[:, 0]).view(B, self.h, self.k).transpose(0, 1)  # [H, B, k]
        q = torch.bmm(q, self.wy.weight.view(self.h, self.k, d)).transpose(0, 1)  # [B, H, d]
        scores = torch.bmm(q, y.transpose(1, 2)) / self.k ** 0.5  # [B, H, L]
        a = scores.masked_fill(~mask[:, None, :], masked_fill_value(scores.dtype)).softmax(-1)
        summary = torch.bmm(a, y).transpose(0, 1)  # [H, B, d]
        out = torch.bmm(summary, self.wz.weight.view(self.h, self.k, d).transpose(1, 2))  # [H, B, k]
        return self.wo(out.transpose(0, 1).reshape(B, 1, self.h * self.k))


class FeedForward(nn.Module):
    """max(0, X U) V (Eq. 25 without the residual, which the layers add)."""

    def __init__(self, d: int, f: int, dropout: float):
        super().__init__()
        self.u, self.v, self.drop = nn.Linear(d, f), nn.Linear(f, d), Dropout(dropout)

    def forward(self, x):
        return self.v(self.drop(F.relu(self.u(x))))


class EncoderLayer(nn.Module):
    """Self-attention then residual feed-forward, each followed by layer norm (Eqs. 24-26)."""

    def __init__(self, d: int, f: int, heads: int, head_dim: int, dropout: float):
        super().__init__()
        self.attn = MultiHead(d, heads, head_dim, dropout)
        self.ff = FeedForward(d, f, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.drop = Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x [B, L, d], mask [B, L] -> [B, L, d]."""
        x = self.norm1(x + self.drop(self.attn(x, self.attn.keys_values(x), mask[:, None, None, :])))
        return self.norm2(x + self.drop(self.ff(x)))


class KVCache:
    """Keys and values of the decoded prefix for every decoder layer, [B, H, S, k] each in zeroed buffers of
    `capacity` = S positions, allocated at the first step (in its dtype: bf16 under autocast); a step writes
    its own positions instead of copying the whole prefix (torch.cat). One cache for both greedy paths:

    - eager: the position is a Python int; the layers attend to views of the positions so far;
    - `static` (CUDA graphs, mqan/static_decode.py): the position `t` is a tensor on the device, and the layers
      attend to all S positions with a mask of those <= t (masked weights are exactly 0, so the answer is that
      of the prefix): fixed shapes, no host synchronisation, so one step can be captured and replayed.
    """

    def __init__(self, layers: int, capacity: int, static: bool = False, device=None):
        self.capacity, self.static, self.length = capacity, static, 0
        self.keys: list[torch.Tensor | None] = [None] * layers
        self.values: list[torch.Tensor | None] = [None] * layers
        self.t = torch.zeros((), dtype=torch.long, device=device) if static else None  # [] the step (static)
        self._table = self._visible = None

    def encodings(self, T: int, d: int, dtype: torch.dtype, device) -> torch.Tensor:
        """[T, d] positional encodings of the next T positions (Eq. 3). Static: T = 1, read from a table of the
        S positions at t, in `dtype`; called once per step, before the layers (it also sets their mask)."""
        if not self.static:
            return positional_encodings(T, d, self.length, device)
        if self._table is None:
            self._table = positional_encodings(self.capacity, d, 0, device)
        self._visible = (torch.arange(self.capacity, device=device) <= self.t)[None, None, None, :]  # [1, 1, 1, S]
        return self._table.index_select(0, self.t.view(1)).to(dtype)

    def update(self, i: int, k: torch.Tensor, v: torch.Tensor):
        """Write the new positions (k, v: [B, H, T, k]) of decoder layer i; returns (keys, values, mask) to
        attend to: the positions so far and no mask, or (static) all S positions and the mask of those <= t."""
        if self.keys[i] is None:
            B, H, _, K = k.shape
            self.keys[i], self.values[i] = k.new_zeros(B, H, self.capacity, K), v.new_zeros(B, H, self.capacity, K)
        keys, values = self.keys[i], self.values[i]
        if self.static:
            keys.index_copy_(2, self.t.view(1), k)
            values.index_copy_(2, self.t.view(1), v)
            return keys, values, self._visible
        end = self.length + k.shape[2]
        if end > self.capacity:
            raise ValueError(f"KVCache: {end} positions do not fit the {self.capacity} allocated")
        keys[:, :, self.length:end] = k
        values[:, :, self.length:end] = v
        return keys[:, :, :end], values[:, :, :end], None

    def advance(self, T: int = 1) -> None:
        """The step is done: the next writes go T positions further (static: in place, on the device)."""
        if self.static:
            self.t.add_(T)
        else:
            self.length += T


class DecoderLayer(nn.Module):
    """Masked self-attention, attention over the context, residual feed-forward (Eqs. 4-6).

    Two modes with one computation: the whole answer at once (causal mask), or the next position given
    the keys/values of the previous positions (`cache`, a KVCache this layer, number `index`, writes to),
    for greedy decoding.
    """

    def __init__(self, d: int, f: int, heads: int, head_dim: int, dropout: float):
        super().__init__()
        self.self_attn = MultiHead(d, heads, head_dim, dropout)
        self.ctx_attn = MultiHead(d, heads, head_dim, dropout)
        self.ff = FeedForward(d, f, dropout)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.drop = Dropout(dropout)

    def forward(self, x, memory, memory_mask, cache: KVCache | None = None, index: int = 0):
        """x [B, T, d] (T = 1 with a cache); memory: C_fin [B, L, d]; memory_mask [B, L]. Returns [B, T, d].

        With a cache (decoding, eval) the attention over C_fin takes `MultiHead.attend_one`'s route.
        """
        k, v = self.self_attn.keys_values(x)  # [B, H, T, k]
        if cache is None:
            T = x.shape[1]
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()  # causal
        else:
            k, v, mask = cache.update(index, k, v)  # one new position sees every cached one
        x = self.norm1(x + self.drop(self.self_attn(x, (k, v), mask)))
        if cache is None or self.training:
            attended = self.ctx_attn(x, self.ctx_attn.keys_values(memory), memory_mask[:, None, None, :])
        else:
            attended = self.ctx_attn.attend_one(x, memory, memory_mask)
        x = self.norm2(x + self.drop(attended))
        return self.norm3(x + self.drop(self.ff(x)))


def positional_encodings(T: int, d: int, offset: int = 0, device=None) -> torch.Tensor:
    """[T, d]: PE[t, k] = sin(t / 10000^(k/d)) for even k, cos(t / 10000^((k-1)/d)) for odd k.

    Eq. 3 prints the exponent as k/2d; this computes k/d, the encoding of Vaswani et al. (2017) that Eq. 3
    cites (there 2i/d for the pair of dimensions 2i, 2i+1) and that the original code uses. With k/2d the
    frequencies would only span 10000^0 .. 10000^-1/2. Listed in docs/fidelity.md."""
    t = torch.arange(offset, offset + T, dtype=torch.float32, device=device)[:, None]
    k = torch.arange(d, device=device)
    freq = torch.pow(10000.0, -(k - k % 2).float() / d)  # [d]
    angle = t * freq
    return torch.where(k % 2 == 0, torch.sin(angle), torch.cos(angle))


class DecoderLSTM(nn.Module):
    """The intermediate decoder LSTM (Eq. 7), `layers` stacked cells; dropout on the input."""

    def __init__(self, d_in: int, d: int, layers: int, dropout: float):
        super().__init__()
        self.cells = nn.ModuleList(nn.LSTMCell(d_in if i == 0 else d, d) for i in range(layers))
        self.drop = Dropout(dropout)

    def forward(self, x: torch.Tensor, state):
        """x [B, d_in]; state = (h, c) each [layers, B, d] -> (top h [B, d], new state)."""
        hs, cs = [], []
        for i, cell in enumerate(self.cells):
            h, c = cell(self.drop(x), (state[0][i], state[1][i]))
            hs.append(h)
            cs.append(c)
            x = h
        return x, (torch.stack(hs), torch.stack(cs))


class PointerAttention(nn.Module):
    """Attention of the decoder state over C_fin (or Q_fin) and the recurrent state (Eqs. 8-9).

    alpha = softmax(X W h) over real positions; state = tanh(W' [X^T alpha ; h]). Returns (state [B, d],
    log alpha [B, L]): log-weights, so the loss can sum pointer mass per token in log space. With h of
    several steps at once ([B, T, d]: the question pointer under teacher forcing, whose output is not fed
    back), both results get the T axis: [B, T, d], [B, T, L].
    """

    def __init__(self, d: int):
        super().__init__()
        self.w = nn.Linear(d, d, bias=False)
        self.w_out = nn.Linear(2 * d, d, bias=False)

    def forward(self, h: torch.Tensor, x: torch.Tensor, mask: torch.Tensor):
        steps = h if h.dim() == 3 else h[:, None]  # [B, T, d]
        scores = self.w(steps) @ x.transpose(1, 2)  # [B, T, L]
        log_alpha = scores.masked_fill(~mask[:, None, :], masked_fill_value(scores.dtype)).log_softmax(-1)
        summary = log_alpha.exp() @ x  # [B, T, d]
        state = torch.tanh(self.w_out(torch.cat([summary, steps], -1)))
        return (state, log_alpha) if h.dim() == 3 else (state[:, 0], log_alpha[:, 0])


class Arm(nn.Module):
    """Compression BiLSTM, self-attentive layers, final BiLSTM (Eqs. 20-27) for one input.

    With `cfg.recompute_encoder`, training keeps only the arm's input and outputs for the backward pass
    and runs the arm again there (activation checkpointing, with the same dropout masks): less memory for
    long inputs, more time per step; the same values and gradients.
    """

    def __init__(self, d_in: int, cfg: ModelConfig, head_dim: int):
        super().__init__()
        d, p = cfg.dimension, cfg.dropout
        self.recompute = cfg.recompute_encoder
        self.compress = BiLSTM(d_in, d, cfg.rnn_layers, p)
        self.drop = Dropout(p)
        self.layers = nn.ModuleList(EncoderLayer(d, cfg.ff_hidden, cfg.heads, head_dim, p)
                                    for _ in range(cfg.transformer_layers))
        self.final = BiLSTM(d, d, cfg.rnn_layers, p)

    def forward(self, x: torch.Tensor, seq: Sequences, final_state: bool = True):
        """x [B, L, d_in] -> (C_fin [B, L, d], the final BiLSTM's final (h, c), or None without `final_state`)."""
        if self.recompute and self.training and torch.is_grad_enabled():
            return checkpoint(self._forward, x, seq, final_state, use_reentrant=False)
        return self._forward(x, seq, final_state)

    def _forward(self, x: torch.Tensor, seq: Sequences, final_state: bool = True):
        x, _ = self.compress(x, seq.packing(x.device), final_state=False)  # [B, L, d] C_com
        x = self.drop(x)
        for layer in self.layers:
            x = layer(x, seq.mask)  # C_self
        return self.final(x, seq.packing(x.device), final_state)  # C_fin [B, L, d], final (h, c)
