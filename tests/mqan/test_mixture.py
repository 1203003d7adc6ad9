"""mqan/mixture.py against the whole distribution it avoids building: `choose` is its argmax (ties to the
lower id), `target_log_probs` its log at the target, `contributions` sum to it; `row_max` is `max(-1)`."""
import pytest
import torch

from mqan.mixture import (Candidates, Pointers, Switches, choose, contributions, distribution, row_max,
                                source_weights, target_log_probs)
from mqan.vocab import UNK_ID

torch.set_num_threads(1)


def sources(N=7, V=1203, L=9, M=4, local=6, question=True, seed=0):
    """Random mixture inputs: pointer ids with repeats, some batch-local (>= V), padding with zero weight."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(N, V, generator=g) * 3
    c_ext = torch.randint(0, V + local, (N, L), generator=g)
    c_ext[:, 1] = c_ext[:, 0]  # a token twice in the context: its masses add up
    scores = torch.randn(N, L, generator=g)
    scores[:, -2:] = float("-inf")  # padding: no mass
    log_ac = scores.log_softmax(-1)
    q_ext = log_aq = sq = None
    if question:
        q_ext = torch.cat([c_ext[:, :1], torch.randint(0, V + local, (N, M - 1), generator=g)], 1)  # shared token
        log_aq, sq = torch.randn(N, M, generator=g).log_softmax(-1), torch.randn(N, generator=g)
    w = source_weights(torch.randn(N, generator=g) * 2, sq)
    return logits, w, Pointers(log_ac, c_ext, log_aq, q_ext), V + local


@pytest.mark.parametrize("question", [True, False])
@pytest.mark.parametrize("seed", range(5))
def test_choose_is_the_argmax_of_the_whole_distribution(question, seed):
    logits, w, pointers, size = sources(question=question, seed=seed)
    p = distribution(logits, w, pointers, size)
    assert torch.allclose(p.sum(-1), torch.ones(len(p)), atol=1e-5)
    y, lp = choose(logits.softmax(-1), w, pointers, Candidates.of(pointers.context_ids, pointers.question_ids))
    best, want = p.max(-1)
    assert torch.equal(y, want)
    assert torch.allclose(lp, best.log(), atol=1e-6)
    parts = contributions(logits.softmax(-1), w, pointers, y)
    assert torch.allclose(parts.sum(-1), best, atol=1e-6)


def test_choose_prefers_pointer_mass_and_breaks_ties_to_the_lower_id():
    V = 1100
    p_vocab = torch.full((3, V), 0.5 / (V - 2))
    p_vocab[:, 40] = p_vocab[:, 900] = 0.25  # two vocabulary tokens tie
    w = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.8, 0.0]])
    c_ext = torch.tensor([[7, 900], [900, 3], [V + 1, 5]])
    log_ac = torch.tensor([[0.5, 0.5], [0.5, 0.5], [0.9, 0.1]]).log()
    y, lp = choose(p_vocab, w, Pointers(log_ac, c_ext), Candidates.of(c_ext, None))
    # row 0: no pointer weight, the tie goes to 40; row 1: 900 gets pointer mass; row 2: the local token wins
    assert y.tolist() == [40, 900, V + 1]
    assert torch.allclose(lp.exp(), torch.tensor([0.25, 0.5 * 0.25 + 0.25, 0.72]))


def test_a_vocabulary_tie_with_a_candidate_goes_to_the_lower_id():
    V = 1000
    p_vocab = torch.zeros(1, V)
    p_vocab[0, 10] = p_vocab[0, 600] = 0.25  # the remaining mass is spread too thin to matter here
    w = torch.tensor([[0.8, 0.2, 0.0]])  # 0.8 * 0.25 == 0.2 exactly in float32: a copied token ties
    one = torch.tensor([[0.0]])  # log 1: all context mass on the single position
    for copied, want in [(V + 3, 10), (5, 5), (800, 10)]:
        ids = torch.tensor([[copied]])
        y, lp = choose(p_vocab, w, Pointers(one, ids), Candidates.of(ids, None))
        assert y.tolist() == [want], copied


@pytest.mark.parametrize("V", [7, 1000, 1203, 50_000])
def test_row_max_is_max_with_the_first_index(V):
    g = torch.Generator().manual_seed(V)
    x = torch.randint(0, 50, (6, V), generator=g).float()  # many equal values
    x[2] = 3.0  # a constant row
    x[3, -1] = 99.0  # the maximum in the tail block
    best, idx = row_max(x)
    want_best, _ = x.max(-1)
    first = (x == want_best[:, None]).float().argmax(-1)
    assert torch.equal(best, want_best) and torch.equal(idx, first)


def test_target_log_probs_is_the_log_of_the_distribution_at_the_target():
    torch.manual_seed(0)
    logits, w, pointers, size = sources(V=50, seed=3)
    c_ext = pointers.context_ids
    out = torch.nn.Linear(5, 50)
    feats = torch.randn(len(logits), 5)
    switches = Switches(torch.logit(w[:, 0]), torch.logit(w[:, 1] / (1 - w[:, 0])))
    y = torch.cat([c_ext[:3, 0], torch.tensor([1, 2, 3, 4])])
    lp = target_log_probs(out, feats, switches, pointers, y)
    p = distribution(out(feats), switches.weights(), pointers, size)
    assert torch.allclose(lp.exp(), p.gather(1, y[:, None])[:, 0], atol=1e-6)
    unreachable = torch.full_like(y, size + 5)  # no source produces it: scored as UNK
    lp_unk = target_log_probs(out, feats, switches, pointers, unreachable)
    assert torch.isfinite(lp_unk).all()
    unk = torch.full_like(y, UNK_ID)
    assert torch.allclose(lp_unk, target_log_probs(out, feats, switches, pointers, unk))
