"""log p_v(y) = log softmax(W_v x + b)[y] (paper Eq. 11) for the training loss, holding one [N, V] matrix.

``-F.cross_entropy(F.linear(x, W, b), y)`` computes the same value but keeps three score-sized matrices
alive around the backward pass (the scores, log_softmax's output saved for backward, the gradient of
nll_loss and then of log_softmax); with a 50,000-token generative vocabulary and 1,000 answer tokens in a
batch each one is 200 MB. Here the scores are the only [N, V] matrix: the forward pass keeps them and their
log-normalizer, and the backward pass turns them in place into the gradient of the scores,
``g * (onehot(y) - softmax)``, before the two products with W and x. The normalizer is computed over
blocks of rows, so no temporary of the full size is made either.

Only the loss needs this: greedy decoding and `MQAN.distributions` build the whole distribution anyway.
The backward pass consumes the saved scores, so the graph cannot be backpropagated twice
(``retain_graph=True`` raises).

Mixed precision: the product runs in x's dtype (bf16 under autocast: the scores are bf16, half the
memory), the normalizer and the returned log-probabilities are fp32, and so are the gradients of the fp32
weight and bias.
"""
from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

ROWS = 256  # rows of the [N, V] scores whose normalizer is computed at a time (256 x 50,000 floats: 51 MB)


def wide(t: torch.Tensor) -> torch.Tensor:
    """`t` in fp32 if it is narrower (bf16, fp16); fp32 and fp64 as they are."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


def _log_normalizer(scores: torch.Tensor) -> torch.Tensor:
    """logsumexp over the last dimension of [N, V] (at least fp32), a block of rows at a time."""
    if not len(scores):
        return wide(scores.new_zeros(0))
    return torch.cat([wide(block).logsumexp(-1) for block in scores.split(ROWS)])


class _VocabLogProb(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, y):
        w = weight.to(x.dtype)  # bf16 under mixed precision: one copy of W_v per step
        scores = torch.addmm(bias.to(x.dtype), x, w.t()) if bias is not None else x @ w.t()  # [N, V]
        lse = _log_normalizer(scores)  # [N], fp32
        ctx.save_for_backward(x, w, y, lse)
        ctx.scores, ctx.has_bias, ctx.weight_dtype = scores, bias is not None, weight.dtype
        return wide(scores.gather(1, y[:, None])[:, 0]) - lse

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        x, weight, y, lse = ctx.saved_tensors
        scores = ctx.scores
        if scores is None:
            raise RuntimeError("vocab_log_prob: backward through the same graph twice (retain_graph=True) is "
                               "not supported: its scores were turned into their gradient the first time")
        ctx.scores = None
        # d log p(y) / d scores = onehot(y) - softmax(scores); scaled by the incoming gradient, in place
        dscores = scores.sub_(lse[:, None].to(scores.dtype)).exp_().mul_(-grad[:, None].to(scores.dtype))
        dscores.scatter_add_(1, y[:, None], grad[:, None].to(scores.dtype))
        dx = dscores @ weight if ctx.needs_input_grad[0] else None
        dw = (dscores.t() @ x).to(ctx.weight_dtype) if ctx.needs_input_grad[1] else None
        db = dscores.sum(0, dtype=ctx.weight_dtype) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return dx, dw, db, None


def vocab_log_prob(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                   y: torch.Tensor) -> torch.Tensor:
    """[N] log softmax(x W^T + b)[y] for x [N, d], W [V, d], b [V] or None, y [N] in range(V)."""
    if not torch.is_grad_enabled() or not (x.requires_grad or weight.requires_grad
                                           or (bias is not None and bias.requires_grad)):
        scores = torch.nn.functional.linear(x, weight.to(x.dtype), None if bias is None else bias.to(x.dtype))
        return wide(scores.gather(1, y[:, None])[:, 0]) - _log_normalizer(scores)
    return _VocabLogProb.apply(x, weight, bias, y)
