"""MQAN's output distribution (paper Eq. 13) in the forms its callers need.

    p(w) = gamma p_v(w) + (1 - gamma) lambda sum_{c_i = w} a^C_i + (1 - gamma)(1 - lambda) sum_{q_i = w} a^Q_i

over the extended vocabulary of a batch: the V generative tokens, then the batch-local tokens that only
the pointers can produce (ids >= V). Without a question pointer (the s2s/satt/catt baselines) lambda = 1.

The inputs are named: `Switches` (the logits of gamma and lambda) and `Pointers` (a^C, a^Q and the ids
they point at), as the model's decoder produces them.

- `target_log_probs`: log p(y) of the training targets, in log space from the three sources; no [N, X]
  distribution is built (the vocabulary term is `vocab_log_prob`, which keeps one [N, V] matrix).
- `choose`: greedy decoding's most probable token. It never builds the [N, X] distribution either:
  every token outside the pointers' candidates (`Candidates`, fixed per batch) has only its vocabulary
  mass, so the best of those is the best vocabulary token; the candidates get their pointer mass on top.
- `distribution`: the whole [N, X] matrix, for tests and analysis; `contributions`: each source's share
  of a chosen token's probability (`deca predict --explain`).

Shapes: N rows (answer positions), V generative vocabulary, X extended vocabulary, L context and M question
positions (S = L + M), U distinct candidate tokens of the batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn import functional as F

from mqan.vocab import UNK_ID
from mqan.vocab_log_prob import vocab_log_prob

NEG = -1e9  # log-weight of "no such source" (finite: keeps gradients free of NaN)
BLOCK = 500  # columns per block in `row_max`


@dataclass(frozen=True)
class Switches:
    """The switch logits of Eq. 12, any leading shape [...]: gamma = sigmoid(vocab) picks the vocabulary
    over the pointers, lambda = sigmoid(question) the context pointer over the question pointer (None
    without a question pointer: lambda = 1)."""
    vocab: torch.Tensor
    question: torch.Tensor | None

    def weights(self) -> torch.Tensor:
        """[..., 3]: gamma, (1-gamma) lambda, (1-gamma)(1-lambda)."""
        return source_weights(self.vocab, self.question)


@dataclass(frozen=True)
class Pointers:
    """The pointer distributions of N rows and the extended ids they point at (Eqs. 9-10)."""
    log_context: torch.Tensor  # [N, L] log a^C
    context_ids: torch.Tensor  # [N, L] extended id of each context position
    log_question: torch.Tensor | None = None  # [N, M] log a^Q (None without a question pointer)
    question_ids: torch.Tensor | None = None  # [N, M]


def source_weights(sv: torch.Tensor, sq: torch.Tensor | None) -> torch.Tensor:
    """Switch logits [...] -> [..., 3]: gamma, (1-gamma) lambda, (1-gamma)(1-lambda) (Eq. 12)."""
    g = torch.sigmoid(sv)
    lam = torch.sigmoid(sq) if sq is not None else torch.ones_like(g)
    return torch.stack([g, (1 - g) * lam, (1 - g) * (1 - lam)], -1)


def target_log_probs(out: torch.nn.Linear, feats: torch.Tensor, switches: Switches, pointers: Pointers,
                     y: torch.Tensor) -> torch.Tensor:
    """[N] log p(y) of the mixture. `out` is W_v (Eq. 11) and feats [N, d] its input; y [N] extended ids.

    A target no source can produce (for catt: a batch-local token found only in the question) counts as
    UNK, so the loss stays bounded.
    """
    V = out.out_features
    c_ext, q_ext, log_aq = pointers.context_ids, pointers.question_ids, pointers.log_question
    reachable = (y < V) | (c_ext == y[:, None]).any(-1)
    if log_aq is not None:
        reachable |= (q_ext == y[:, None]).any(-1)
    y = torch.where(reachable, y, UNK_ID)
    gen = y < V
    lpv = vocab_log_prob(feats, out.weight, out.bias, torch.where(gen, y, 0)).masked_fill(~gen, NEG)
    lpc = pointers.log_context.masked_fill(c_ext != y[:, None], NEG).logsumexp(-1)
    sv, sq = switches.vocab, switches.question
    lg, l1g = F.logsigmoid(sv), F.logsigmoid(-sv)
    if log_aq is None:
        return torch.stack([lg + lpv, l1g + lpc]).logsumexp(0)
    lpq = log_aq.masked_fill(q_ext != y[:, None], NEG).logsumexp(-1)
    return torch.stack([lg + lpv, l1g + F.logsigmoid(sq) + lpc, l1g + F.logsigmoid(-sq) + lpq]).logsumexp(0)


def _pointer_mass(w: torch.Tensor, pointers: Pointers) -> torch.Tensor:
    """[N, S]: the probability each source position adds to its token, context then question."""
    mass = w[:, 1:2] * pointers.log_context.exp()
    if pointers.log_question is None:
        return mass
    return torch.cat([mass, w[:, 2:3] * pointers.log_question.exp()], 1)


def distribution(logits: torch.Tensor, w: torch.Tensor, pointers: Pointers, size: int) -> torch.Tensor:
    """The whole mixed distribution over the extended vocabulary, [N, X=size]; w [N, 3] from `source_weights`."""
    V = logits.shape[-1]
    p = logits.new_zeros(logits.shape[0], size)
    p[:, :V] = w[:, :1] * logits.softmax(-1)
    ext = pointers.context_ids if pointers.log_question is None else torch.cat([pointers.context_ids,
                                                                                pointers.question_ids], 1)
    return p.scatter_add_(1, ext, _pointer_mass(w, pointers))


@dataclass(frozen=True)
class Candidates:
    """The tokens the pointers can produce in a batch, which do not change while it is decoded."""
    ids: torch.Tensor  # [U] distinct extended ids of every context and question position, ascending
    index: torch.Tensor  # [B, S] position of each source position's token in `ids`, context then question

    @classmethod
    def of(cls, context_ids: torch.Tensor, question_ids: torch.Tensor | None) -> "Candidates":
        """The candidates of a batch: its context ids [B, L] and question ids [B, M] (None: no question pointer)."""
        c_ext, q_ext = context_ids, question_ids
        ext = c_ext if q_ext is None else torch.cat([c_ext, q_ext], 1)
        ids, index = torch.unique(ext, sorted=True, return_inverse=True)
        return cls(ids, index)


def row_max(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The maximum of each row of x [N, V] and its first index: `x.max(-1)`, about 4x faster for wide rows
    on CPU, where the max with index is not vectorized and the plain max is. Block maxima locate the
    first block holding the row's maximum; the index is searched in that block only."""
    N, V = x.shape
    K = V // BLOCK
    if K < 2 or not x.is_contiguous():
        return x.max(-1)
    blocks = x[:, : K * BLOCK].view(N, K, BLOCK)
    best, k = blocks.amax(-1).max(-1)  # [N]: the maximum, the first block that holds it
    idx = k * BLOCK + blocks[torch.arange(N, device=x.device), k].argmax(-1)
    if K * BLOCK < V:
        tail_best, tail_idx = x[:, K * BLOCK:].max(-1)
        later = tail_best > best
        best, idx = torch.where(later, tail_best, best), torch.where(later, tail_idx + K * BLOCK, idx)
    return best, idx


def choose(p_vocab: torch.Tensor, w: torch.Tensor, pointers: Pointers,
           cand: Candidates) -> tuple[torch.Tensor, torch.Tensor]:
    """The most probable token of the mixture and its log-probability, ([N], [N]); ties go to the lower id,
    as the argmax of `distribution` would. p_vocab [N, V] = softmax(W_v c~_t) (Eq. 11), w [N, 3]."""
    V = p_vocab.shape[1]
    best, y = row_max(p_vocab)  # the best token without pointer mass: every non-candidate is below it
    best = w[:, 0] * best
    in_vocab = cand.ids < V
    value = p_vocab.index_select(1, torch.where(in_vocab, cand.ids, 0)).mul_(in_vocab).mul_(w[:, :1])  # [N, U]
    value.scatter_add_(1, cand.index, _pointer_mass(w, pointers))
    cand_best, j = value.max(-1)  # ids ascend: the lower id among equals
    cand_y = cand.ids[j]
    take = (cand_best > best) | ((cand_best == best) & (cand_y < y))
    return torch.where(take, cand_y, y), torch.where(take, cand_best, best).log()


def contributions(p_vocab: torch.Tensor, w: torch.Tensor, pointers: Pointers, y: torch.Tensor) -> torch.Tensor:
    """[N, 3]: the probability of token y from the vocabulary, the context pointer and the question pointer
    (they sum to p(y)). p_vocab [N, V] = softmax(W_v c~_t)."""
    gen = y < p_vocab.shape[1]
    p_v = p_vocab.gather(1, torch.where(gen, y, 0)[:, None])[:, 0] * gen
    p_c = (pointers.log_context.exp() * (pointers.context_ids == y[:, None])).sum(-1)
    p_q = ((pointers.log_question.exp() * (pointers.question_ids == y[:, None])).sum(-1)
           if pointers.log_question is not None else torch.zeros_like(p_c))
    return w * torch.stack([p_v, p_c, p_q], -1)
