"""Greedy decoding of a `Decoder` (mqan/decoding.py: MQAN, mqan/model.py): the answer one token at a time,
each the most probable under the output distribution (Eq. 13, mqan/mixture.py), until every answer has <eos>
or `max_len` steps.

`steps` is the loop as a generator (it yields after the encoder and after each step, so `deca serve` can run
other calls' batches in between); `static` the same with static shapes for CUDA graphs (mqan/static_decode.py).
Both call the model's one decoding step (`Decoder.decode_step`) and choose with mqan/mixture.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Generator

import torch

from deca.text import detokenize
from mqan import mixture, static_decode, syncs
from mqan.batch import Batch
from mqan.decoding import Decoder
from mqan.vocab import EOS_ID, INIT_ID, PAD_ID


@dataclass
class GreedyOutput:
    tokens: list[list[str]]  # answer tokens (up to <eos>, specials dropped)
    texts: list[str]  # detokenized answers
    ids: torch.Tensor  # [B, S] extended ids chosen at each step (S <= max_len)
    log_probs: torch.Tensor  # [B, S] log p of the chosen token (0 after <eos>)
    source_weights: torch.Tensor  # [B, S, 3] weights of vocabulary / context ptr / question ptr (0 after <eos>)
    lengths: torch.Tensor  # [B] steps taken up to and including <eos>
    contributions: torch.Tensor | None = None  # [B, S, 3] p(chosen token) from each source (they sum to it)


def static(model: Decoder, batch: Batch, max_len: int) -> GreedyOutput:
    """Greedy decoding with static shapes (mqan/static_decode.py): one step captured as a CUDA graph on a GPU."""
    enc = model.encode(batch)
    st, taken = static_decode.run(model, enc, max_len, graphs=True)
    live = ~st.finished[:, :taken]
    ids_t = st.ids[:, :taken].masked_fill(~live, PAD_ID)
    tokens = [batch.ext_to_tokens(row, model.vocab) for row in ids_t.tolist()]
    return GreedyOutput(tokens, [detokenize(t) if t else "" for t in tokens], ids_t,
                        st.log_probs[:, :taken].masked_fill(~live, 0.0),
                        st.weights[:, :taken].masked_fill(~live[..., None], 0.0), live.sum(1))


def steps(model: Decoder, batch: Batch, max_len: int, incremental: bool,
          explain: bool = False) -> Generator[None, None, GreedyOutput]:
    """Greedy decoding of `batch` (the model in eval mode, gradients off) as a generator that yields after the
    encoder and after each step; its return value is the output. `incremental`: the decoder keeps the keys and
    values of past positions (KVCache) instead of recomputing the whole prefix at each step (with self-attentive
    decoder layers; s2s's step reads the previous token only)."""
    enc = model.encode(batch)
    yield
    B = batch.size
    prev = torch.full((B, 1), INIT_ID, dtype=torch.long, device=enc.context.device)
    state, ctx = enc.state, enc.context.new_zeros(B, enc.context.shape[-1])
    incremental = incremental or not model.self_attentive
    cache = model.new_cache(max_len) if incremental else None
    prefix = prev
    candidates = mixture.Candidates.of(enc.context_ext, enc.question_ext)
    done = torch.zeros(B, dtype=torch.bool, device=prev.device)
    check = syncs.check_every(prev.device)
    ids, lps, weights, finished, parts = [], [], [], [], []
    for t in range(max_len):
        step = model.decode_step(enc, prev if incremental else prefix, state, ctx, cache)
        state, ctx, w = step.state, step.context, step.weights
        y, lp = mixture.choose(step.p_vocab, w, step.pointers, candidates)  # [B] the most probable token (Eq. 13)
        if explain:
            parts.append(mixture.contributions(step.p_vocab, w, step.pointers, y))
        finished.append(done.clone())
        ids.append(y)
        lps.append(lp)
        weights.append(w)
        done |= y == EOS_ID
        if (t + 1) % check == 0 and bool(done.all()):  # a host synchronisation: on a GPU every `check` steps
            break
        prev = y[:, None]
        if not incremental:
            prefix = torch.cat([prefix, prev], 1)
        yield
    live = ~torch.stack(finished, 1)  # [B, S] steps up to and including <eos>
    if check > 1:  # steps after every answer ended: all finished, dropped
        live = live[:, : int(live.any(0).sum())]
    S = live.shape[1]
    ids_t = torch.stack(ids, 1)[:, :S].masked_fill(~live, PAD_ID)
    lp_t = torch.stack(lps, 1)[:, :S].masked_fill(~live, 0.0)
    w_t = torch.stack(weights, 1)[:, :S].masked_fill(~live[..., None], 0.0)
    tokens = [batch.ext_to_tokens(row, model.vocab) for row in ids_t.tolist()]
    c_t = torch.stack(parts, 1)[:, :S].masked_fill(~live[..., None], 0.0) if explain else None
    return GreedyOutput(tokens, [detokenize(t) if t else "" for t in tokens], ids_t, lp_t, w_t, live.sum(1), c_t)
