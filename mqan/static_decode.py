"""Greedy decoding with static shapes, so that one decoding step can be captured as a CUDA graph and replayed.

`MQAN.greedy(..., cuda_graphs=True)` comes here. Each step of `MQAN._greedy` launches a few hundred small
kernels (decoder layers, LSTM cell, two pointer attentions, W_v, the mixture's argmax) and its shapes grow
with the step (the cached prefix). Here every tensor a step reads or writes has a size fixed for the whole
batch: the model's one decoding step (`decode_step`, mqan/decoding.py) over a static KVCache (mqan/layers.py),
its results written in place into those buffers:

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
from mqan.decoding import Decoder, Encoded
from mqan.layers import KVCache
from mqan.syncs import check_every
from mqan.vocab import EOS_ID, INIT_ID

WARMUP = 1  # eager steps before the capture (lazy initialisation, and the caches take the step's dtype)


@dataclass
class StaticState:
    """Every buffer a decoding step reads and writes, allocated once per batch (B rows, S = max_len)."""
    cache: KVCache  # static: the step t on the device, the decoder layers' keys/values [B, H, S, k]
    prev: torch.Tensor  # [B, 1] previous token (extended id)
    h: torch.Tensor  # [layers, B, d] decoder LSTM state
    c: torch.Tensor
    ctx: torch.Tensor  # [B, d] c~_{t-1}
    done: torch.Tensor  # [B] bool
    ids: torch.Tensor  # [B, S] chosen extended ids
    log_probs: torch.Tensor  # [B, S]
    weights: torch.Tensor  # [B, S, 3]
    finished: torch.Tensor  # [B, S] bool: the row had <eos> before step t

    @property
    def t(self) -> torch.Tensor:
        """[] long, the step (on the device)."""
        return self.cache.t


def new_state(model: Decoder, enc: Encoded, max_len: int) -> StaticState:
    """Zeroed buffers for decoding the encoded batch `enc` for up to `max_len` steps."""
    B, d = enc.context.shape[0], enc.context.shape[-1]
    dev, dtype = enc.context.device, enc.context.dtype
    h, c = (s.clone() for s in enc.state)
    return StaticState(model.new_cache(max_len, static=True, device=dev),
                       torch.full((B, 1), INIT_ID, dtype=torch.long, device=dev), h, c,
                       torch.zeros(B, d, device=dev, dtype=dtype), torch.zeros(B, dtype=torch.bool, device=dev),
                       torch.zeros(B, max_len, dtype=torch.long, device=dev),
                       torch.zeros(B, max_len, device=dev), torch.zeros(B, max_len, 3, device=dev),
                       torch.ones(B, max_len, dtype=torch.bool, device=dev))


def step(model: Decoder, enc: Encoded, st: StaticState, candidates: mixture.Candidates) -> None:
    """One greedy step, the model's `decode_step` over the static cache, its results written in place in `st`
    (no host synchronisation, no shape that depends on t)."""
    out = model.decode_step(enc, st.prev, (st.h, st.c), st.ctx, st.cache)
    y, lp = mixture.choose(out.p_vocab, out.weights, out.pointers, candidates)  # [B]
    col = st.t.view(1) - 1  # the step's column (decode_step moved the cache on to t + 1)
    st.finished.index_copy_(1, col, st.done[:, None])
    st.ids.index_copy_(1, col, y[:, None])
    st.log_probs.index_copy_(1, col, lp[:, None].float())
    st.weights.index_copy_(1, col, out.weights[:, None].float())
    st.done.logical_or_(y == EOS_ID)
    st.prev.copy_(y[:, None])
    st.h.copy_(out.state[0])
    st.c.copy_(out.state[1])
    st.ctx.copy_(out.context)


def run(model: Decoder, enc: Encoded, max_len: int, graphs: bool,
        check: int | None = None) -> tuple[StaticState, int]:
    """Decode `enc` in place; returns the state and the number of steps `MQAN._greedy` would have taken.
    `check`: steps between the host checks for the end (default `check_every` of the device)."""
    st = new_state(model, enc, max_len)
    candidates = mixture.Candidates.of(enc.context_ext, enc.question_ext)
    graphs = graphs and enc.context.is_cuda
    check = check or check_every(enc.context.device)

    def one():
        step(model, enc, st, candidates)

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
