"""Greedy decoding with static shapes, so that one decoding step can be captured as a CUDA graph and replayed.

`MQAN.greedy(..., cuda_graphs=True)` comes here. Each step of `MQAN._greedy` launches a few hundred small
kernels (decoder layers, LSTM cell, two pointer attentions, W_v, the mixture's argmax) and its shapes grow
with the step (the cached prefix). Here every tensor a step reads or writes has a size fixed for the whole
batch, and the step itself is written in place into those buffers:

- the keys/values of the decoded prefix live in zeroed buffers of `max_len` positions; a step writes its own
  position and attends to all of them with a mask of the positions so far (masked weights are exactly 0,
  so the answer is that of the growing prefix);
- the position t is a tensor on the device, advanced by the step itself; the positional encoding is read
  from a table at t;
- the chosen ids, their log-probabilities, source weights and "finished" flags are written at column t of
  [B, max_len] buffers.

On a GPU the first steps run eagerly (warm-up, on a side stream as CUDA graphs require), one step is
captured, and the rest are replays of it: one launch per step instead of hundreds. Whether every answer has
ended is asked every `syncs.CHECK_EVERY` steps (each question is a host synchronisation); the result is trimmed to
the steps `MQAN._greedy` would have taken. On a CPU the same static step runs eagerly (for tests: it must
choose the ids `MQAN._greedy` chooses).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from mqan import mixture
from mqan.syncs import check_every
from mqan.layers import positional_encodings
from mqan.vocab import EOS_ID, INIT_ID
from mqan.vocab_log_prob import wide

WARMUP = 1  # eager steps before the capture (lazy initialisation, and the caches take the step's dtype)


@dataclass
class StaticState:
    """Every buffer a decoding step reads and writes, allocated once per batch (B rows, S = max_len)."""
    t: torch.Tensor  # [] long, the step
    prev: torch.Tensor  # [B, 1] previous token (extended id)
    h: torch.Tensor  # [layers, B, d] decoder LSTM state
    c: torch.Tensor
    ctx: torch.Tensor  # [B, d] c~_{t-1}
    done: torch.Tensor  # [B] bool
    keys: list[torch.Tensor | None]  # per decoder layer, [B, H, S, k] (made by the first step, in its dtype)
    values: list[torch.Tensor | None]
    ids: torch.Tensor  # [B, S] chosen extended ids
    log_probs: torch.Tensor  # [B, S]
    weights: torch.Tensor  # [B, S, 3]
    finished: torch.Tensor  # [B, S] bool: the row had <eos> before step t


def new_state(model, enc, max_len: int) -> StaticState:
    """Zeroed buffers for decoding the encoded batch `enc` for up to `max_len` steps."""
    B, d = enc.context.shape[0], enc.context.shape[-1]
    dev, dtype = enc.context.device, enc.context.dtype
    layers = len(getattr(model, "decoder_layers", []))
    keys, values = [None] * layers, [None] * layers
    h, c = (s.clone() for s in enc.state)
    return StaticState(torch.zeros((), dtype=torch.long, device=dev),
                       torch.full((B, 1), INIT_ID, dtype=torch.long, device=dev), h, c,
                       torch.zeros(B, d, device=dev, dtype=dtype), torch.zeros(B, dtype=torch.bool, device=dev),
                       keys, values, torch.zeros(B, max_len, dtype=torch.long, device=dev),
                       torch.zeros(B, max_len, device=dev), torch.zeros(B, max_len, 3, device=dev),
                       torch.ones(B, max_len, dtype=torch.bool, device=dev))


def _decoder_layer(layer, x, memory, memory_mask, st: StaticState, i: int, visible):
    """`DecoderLayer.forward` for one position with a fixed-size cache (eval mode): write position st.t of layer
    i's cache (zeros, made at the first step in the dtype of its keys: bf16 under autocast), attend to the
    positions `visible` ([S] bool)."""
    k, v = layer.self_attn.keys_values(x)  # [B, H, 1, k]
    if st.keys[i] is None:
        st.keys[i] = k.new_zeros(k.shape[0], k.shape[1], len(visible), k.shape[3])
        st.values[i] = v.new_zeros(v.shape[0], v.shape[1], len(visible), v.shape[3])
    keys, values, t = st.keys[i], st.values[i], st.t
    keys.index_copy_(2, t.view(1), k)
    values.index_copy_(2, t.view(1), v)
    x = layer.norm1(x + layer.self_attn(x, (keys, values), visible[None, None, None, :]))
    x = layer.norm2(x + layer.ctx_attn.attend_one(x, memory, memory_mask))
    return layer.norm3(x + layer.ff(x))


def step(model, enc, st: StaticState, pe: torch.Tensor, candidates: mixture.Candidates,
         question_ids: torch.Tensor | None) -> None:
    """One greedy step, entirely in place in `st` (no host synchronisation, no shape that depends on t)."""
    t = st.t
    x = model.dec_proj(model.embed(st.prev, enc.features))  # A_proj [B, 1, d]
    if model.arch.self_attention:
        x = x + pe.index_select(0, t.view(1))[None].to(x.dtype)  # A_ppr (no dropout in eval)
        visible = torch.arange(pe.shape[0], device=t.device) <= t
        for i, layer in enumerate(model.decoder_layers):
            x = _decoder_layer(layer, x, enc.context, enc.context_mask, st, i, visible)
    out, (h, c) = model._step(enc, x[:, 0], (st.h, st.c), st.ctx)
    p_vocab = torch.softmax(wide(model._logits(out.context)), -1)  # [B, V]
    w = model._switches(out).weights()
    pointers = mixture.Pointers(wide(out.log_context), enc.context_ext,
                                None if out.log_question is None else wide(out.log_question), question_ids)
    y, lp = mixture.choose(p_vocab, w, pointers, candidates)
    col = t.view(1)
    st.finished.index_copy_(1, col, st.done[:, None])
    st.ids.index_copy_(1, col, y[:, None])
    st.log_probs.index_copy_(1, col, lp[:, None].float())
    st.weights.index_copy_(1, col, w[:, None].float())
    st.done.logical_or_(y == EOS_ID)
    st.prev.copy_(y[:, None])
    st.h.copy_(h)
    st.c.copy_(c)
    st.ctx.copy_(out.context)
    st.t.add_(1)


def run(model, enc, max_len: int, graphs: bool, check: int | None = None) -> tuple[StaticState, int]:
    """Decode `enc` in place; returns the state and the number of steps `MQAN._greedy` would have taken.
    `check`: steps between the host checks for the end (default `check_every` of the device)."""
    st = new_state(model, enc, max_len)
    pe = positional_encodings(max_len, enc.context.shape[-1], 0, enc.context.device)
    question_ids = enc.question_ext if model.arch.question_pointer else None
    candidates = mixture.Candidates.of(enc.context_ext, question_ids)
    graphs = graphs and enc.context.is_cuda
    check = check or check_every(enc.context.device)

    def one():
        step(model, enc, st, pe, candidates, question_ids)

    graph = None
    for t in range(max_len):
        if graph is not None:
            graph.replay()
        elif graphs and t >= WARMUP and t < max_len - 1:
            graph = _capture(one)
            graph.replay()
        elif graphs:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                one()
            torch.cuda.current_stream().wait_stream(side)
        else:
            one()
        if (t + 1) % check == 0 and bool(st.done.all()):
            break
    live_steps = int((~st.finished).any(0).sum())
    return st, live_steps


def _capture(fn) -> "torch.cuda.CUDAGraph":
    """`fn` captured as a CUDA graph (nothing runs during the capture)."""
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        fn()
    return graph
