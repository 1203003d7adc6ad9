import random

import numpy as np
import pytest
import torch

from tests.support import GEN, OOV, VOCAB, tiny_cfg, tiny_model
from deca.config import ModelConfig
from mqan.batch import collate
from mqan.model import VARIANTS, build_model, count_parameters
from mqan.vectors import VectorSource
from mqan.vocab import EOS_ID, PAD_ID, Vocab

torch.set_num_threads(1)

ALL = ["s2s", "satt", "catt", "mqan"]


def random_rows(n, seed=0, unseen=True):
    """Rows of varied lengths mixing generative, batch-local and (optionally) entirely unknown tokens."""
    rng = random.Random(seed)
    pool = GEN + OOV[:8] + ([" never ", " seen "] if unseen else [])
    rows = []
    for i in range(n):
        c = [rng.choice(pool) for _ in range(rng.randint(1, 9))]
        q = [rng.choice(pool) for _ in range(rng.randint(1, 5))]
        a = [rng.choice(c + q + GEN) for _ in range(rng.randint(0, 4))]
        rows.append({"id": str(i), "context_tokens": c, "question_tokens": q, "answer_tokens": a})
    return rows


@pytest.mark.parametrize("variant", ALL)
def test_output_shapes(variant):
    model = tiny_model(variant)
    b = collate(random_rows(5), VOCAB)
    loss = model(b)
    assert loss.shape == () and torch.isfinite(loss)
    lp = model.token_log_probs(b)
    assert lp.shape == b.answer_targets.shape and (lp[~b.answer_mask] == 0).all() and (lp[b.answer_mask] < 0).all()
    d = model.distributions(b)
    assert d.shape == (*b.answer_targets.shape, b.extended_size)
    out = model.greedy(b, max_len=4)
    S = out.ids.shape[1]
    assert out.ids.shape == (5, S) and S <= 4 and out.log_probs.shape == (5, S)
    assert out.source_weights.shape == (5, S, 3) and out.lengths.shape == (5,)
    assert len(out.tokens) == len(out.texts) == 5 and all(isinstance(t, str) for t in out.texts)
    assert model.training  # greedy restores the mode


@pytest.mark.parametrize("variant", ALL)
def test_padding_changes_nothing(variant):
    model = tiny_model(variant).eval()
    rows = random_rows(6, seed=1)
    big = collate(rows, VOCAB)
    lp_big = model.token_log_probs(big)
    enc_big = model.encode(big)
    out_big = model.greedy(big, max_len=5)
    for i, r in enumerate(rows):
        one = collate([r], VOCAB)
        n = int(one.answer_mask.sum())
        assert torch.allclose(model.token_log_probs(one)[0, :n], lp_big[i, :n], atol=1e-5)
        enc = model.encode(one)
        L = int(enc.context_mask.sum())
        assert torch.allclose(enc.context[0, :L], enc_big.context[i, :L], atol=1e-5)
        out = model.greedy(one, max_len=5)
        k = int(out.lengths[0])
        assert out.tokens[0] == out_big.tokens[i]
        assert torch.allclose(out.log_probs[0, :k], out_big.log_probs[i, :k], atol=1e-5)
        assert torch.allclose(out.source_weights[0, :k], out_big.source_weights[i, :k], atol=1e-5)


@pytest.mark.parametrize("variant", ALL)
def test_mixed_distribution_sums_to_one_and_matches_the_loss(variant):
    model = tiny_model(variant).eval()
    b = collate(random_rows(6, seed=2), VOCAB)
    d = model.distributions(b)
    m = b.answer_mask
    assert torch.allclose(d[m].sum(-1), torch.ones(int(m.sum())), atol=1e-5)
    assert (d[m] >= 0).all()
    lp = model.token_log_probs(b)
    assert torch.allclose(lp[m].exp(), d[m].gather(1, b.answer_targets[m][:, None]).squeeze(1), atol=1e-6)
    assert torch.allclose(model(b), -lp[m].mean(), atol=1e-6)
    assert torch.allclose(model(b, reduction="sum"), -lp.sum(), atol=1e-4)


@pytest.mark.parametrize("variant", ALL)
def test_greedy_equals_teacher_forcing_on_its_prefix(variant):
    model = tiny_model(variant, seed=3)
    with torch.no_grad():  # favour pointers so copied batch-local tokens appear in the outputs
        model.vocab_switch.bias.fill_(-1.0)
    model.eval()
    b = collate(random_rows(6, seed=3), VOCAB)
    out = model.greedy(b, max_len=6)
    assert (out.ids >= b.generative_size).any()  # some steps copied a batch-local token
    live = torch.arange(out.ids.shape[1])[None, :] < out.lengths[:, None]  # steps up to <eos>
    tf = model.token_log_probs(b, out.ids, live)
    assert torch.allclose(tf[live], out.log_probs[live], atol=1e-5)
    assert torch.equal(model.distributions(b, out.ids, live).argmax(-1)[live], out.ids[live])
    slow = model.greedy(b, max_len=6, incremental=False)  # recomputes the whole prefix every step
    assert torch.equal(slow.ids, out.ids) and torch.allclose(slow.log_probs, out.log_probs, atol=1e-5)
    w = out.source_weights[live]
    assert torch.allclose(w.sum(-1), torch.ones(len(w)), atol=1e-5)
    if variant != "mqan":
        assert (w[:, 2] == 0).all()


def test_stacked_lstms_and_small_heads_decode_consistently():
    model = tiny_model("mqan", rnn_layers=2, transformer_layers=1, heads=3, head_dim=5).eval()
    assert model.lstm.cells[1].hidden_size == 16 and model.decoder_layers[0].self_attn.wx.out_features == 15
    b = collate(random_rows(4, seed=7), VOCAB)
    out = model.greedy(b, max_len=5)
    live = torch.arange(out.ids.shape[1])[None, :] < out.lengths[:, None]
    assert torch.allclose(model.token_log_probs(b, out.ids, live)[live], out.log_probs[live], atol=1e-5)
    model.train()
    model(b).backward()
    assert all(p.grad is not None for p in model.parameters())


@pytest.mark.parametrize("variant", ALL)
def test_every_parameter_receives_a_gradient(variant):
    model = tiny_model(variant)
    model(collate(random_rows(6, seed=4), VOCAB)).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_copies_a_token_outside_the_generative_vocabulary_from_context_and_question():
    model = tiny_model("mqan").eval()
    assert not VOCAB.is_generative(" zzz ") and " zzz " not in VOCAB.stoi
    rows = [{"context_tokens": [" zzz "], "question_tokens": [" qqq "], "answer_tokens": [" zzz "]},
            {"context_tokens": [" x3 "], "question_tokens": [" qqq "], "answer_tokens": [" qqq "]}]
    b = collate(rows, VOCAB)
    with torch.no_grad():
        model.vocab_switch.bias.fill_(-40.0)  # gamma ~ 0: point
        model.question_switch.bias.fill_(40.0)  # lambda ~ 1: into the context
        out = model.greedy(b, max_len=1)
        assert [t[0] for t in out.tokens] == [" zzz ", " x3 "]
        assert out.source_weights[:, 0, 1].min() > 0.999
        assert model.token_log_probs(b)[0, 0] > -1e-3
        model.question_switch.bias.fill_(-40.0)  # lambda ~ 0: into the question
        out = model.greedy(b, max_len=1)
        assert [t[0] for t in out.tokens] == [" qqq ", " qqq "] and out.texts[0] == "qqq"
        assert out.source_weights[:, 0, 2].min() > 0.999
        assert model.token_log_probs(b)[1, 0] > -1e-3


def test_a_token_no_source_can_produce_costs_unk_not_infinity():
    model = tiny_model("catt").eval()  # no question pointer: a question-only token is unreachable
    b = collate([{"context_tokens": [" w1 "], "question_tokens": [" qqq "], "answer_tokens": [" qqq "]}], VOCAB)
    lp = model.token_log_probs(b)[0, 0]
    assert torch.isfinite(lp) and lp > -50


def _copy_example(rng):
    c = [rng.choice(OOV + GEN[:10]) for _ in range(rng.randint(2, 5))]
    return {"context_tokens": c, "question_tokens": [" copy "], "answer_tokens": c}


def _choice_example(rng):
    a, b = rng.sample(OOV, 2)
    pos = rng.random() < 0.5
    c = [rng.choice(GEN[:10]) for _ in range(rng.randint(2, 5))]
    c.insert(rng.randint(0, len(c)), " good " if pos else " bad ")
    return {"context_tokens": c, "question_tokens": [a, " or ", b, " ? "], "answer_tokens": [a if pos else b]}


@pytest.mark.parametrize("make, source", [(_copy_example, 1), (_choice_example, 2)], ids=["copy", "question-pointer"])
def test_tiny_model_learns(make, source):
    """Copy the context / answer with one of two labels named only in the question (batch-local tokens)."""
    torch.manual_seed(0)
    model = build_model(tiny_cfg(dimension=32, ff_hidden=32, transformer_layers=1, dropout=0.0), VOCAB)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    rng = random.Random(0)
    held_out = collate([make(random.Random(10_000 + i)) for i in range(64)], VOCAB)
    gold = [held_out.ext_to_tokens(r, VOCAB) for r in held_out.answer_targets.tolist()]
    acc = 0.0
    for step in range(1, 301):
        loss = model(collate([make(rng) for _ in range(32)], VOCAB))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            out = model.greedy(held_out, max_len=7)
            acc = sum(o == g for o, g in zip(out.tokens, gold)) / len(gold)
            if acc == 1.0:
                break
    assert acc == 1.0, f"accuracy {acc} after {step} steps"
    # the answers were produced by the intended source (Figure 3's quantity)
    first = out.source_weights[:, 0]
    assert (first.argmax(-1) == source).float().mean() > 0.9


def test_paper_configuration_parameter_count():
    """d=200, f=150, p=3, 2 layers, 400-d frozen embeddings, 50,000-token generative vocabulary."""
    vocab = Vocab.from_tokens([f"t{i}" for i in range(50_000)], 50_000)
    vectors = VectorSource.from_arrays("zeros-400", [t.strip() for t in vocab.itos], np.zeros((len(vocab), 400)))
    cfg = ModelConfig(word_vectors=None, char_ngram_dim=0, embedding_dim=0)
    model = build_model(cfg, vocab, word_vectors=vectors)
    d, f, p, V = 200, 150, 3, 50_000

    def bilstm(i, h):  # two directions, each 4 gates with input, recurrent weights and two biases
        return 2 * 4 * h * (i + h + 2)

    mha = 3 * d * (p * d) + (p * d) * d  # W^X, W^Y, W^Z project each head to d; W_o: p*d -> d
    ff = d * f + f + f * d + d
    enc_layer, dec_layer = mha + ff + 2 * 2 * d, 2 * mha + ff + 3 * 2 * d
    expected = (
        2 * (400 * d + d)  # W1, W2
        + bilstm(d, d // 2)  # BiLSTM_ind
        + 2 * d  # sentinels
        + 2 * (bilstm(4 * d, d // 2) + 2 * enc_layer + bilstm(d, d // 2))  # both arms
        + 2 * dec_layer
        + 4 * d * (2 * d + d + 2)  # decoder LSTM cell
        + 2 * (d * d + 2 * d * d)  # attention W and W' for context and question
        + 2 * (3 * d + 1)  # switches
        + d * V + V  # W_v
    )
    assert count_parameters(model) == expected == 17_309_302
    assert set(VARIANTS) == {"s2s", "satt", "catt", "qptr", "mqan"}


def test_bad_config_is_rejected():
    with pytest.raises(ValueError, match="variant"):
        build_model(tiny_cfg("transformer"), VOCAB)
    with pytest.raises(ValueError, match="even"):
        build_model(tiny_cfg(dimension=15), VOCAB)
    with pytest.raises(ValueError, match="word_dropout"):
        build_model(tiny_cfg(word_dropout=1.0), VOCAB)
    with pytest.raises(ValueError, match="embedding_init_std"):
        build_model(tiny_cfg(embedding_init_std=0.0), VOCAB)


def test_trained_char_ngram_vectors_are_the_mean_of_the_hashed_ngrams_and_learn():
    model = tiny_model("mqan", char_ngram_dim=6, char_ngram_buckets=64)
    emb = model.embed
    assert emb.dim == 6 + 8 and model.enc_proj.in_features == 14
    x1 = VOCAB.stoi[" x1 "]  # past the generative vocabulary: featurized as a batch-local token
    feats = emb.batch_features([" x1 "], "cpu")
    out = emb(torch.tensor([[VOCAB.generative_size]]), feats)[0, 0]
    grams = [g for g in feats["grams"][0].tolist() if g != 64]
    assert x1 >= VOCAB.generative_size and len(grams) == 3 + 2 + 1  # "#BEGIN#","x","1","#END#": 3+2+1 n-grams
    assert torch.allclose(out[:6], emb.char[grams].mean(0))
    model(collate(random_rows(6), VOCAB)).backward()
    assert emb.char.grad is not None and emb.char.grad.abs().sum() > 0
    state = model.state_dict()
    assert "embed.gen_grams" not in state and "embed.char" in state  # rebuilt from the strings, not saved


def test_trained_embeddings_start_at_the_configured_scale():
    torch.manual_seed(0)
    big = build_model(tiny_cfg(embedding_dim=64, embedding_init_std=1.0), VOCAB).embed.weight
    torch.manual_seed(0)
    small = build_model(tiny_cfg(embedding_dim=64, embedding_init_std=0.01), VOCAB).embed.weight
    assert float(small.std()) == pytest.approx(0.01, rel=0.1)
    assert torch.allclose(small * 100, big)


@pytest.mark.parametrize("variant", ["s2s", "mqan"])
def test_word_dropout_reads_inputs_as_unk_in_training_only(variant):
    rows = random_rows(6, seed=3)
    batch = collate(rows, VOCAB)
    plain = tiny_model(variant, dropout=0.0, embedding_init_std=1.0)
    dropped = tiny_model(variant, dropout=0.0, word_dropout=0.5, embedding_init_std=1.0)
    dropped.load_state_dict(plain.state_dict())
    with torch.no_grad():
        plain.eval(), dropped.eval()
        assert torch.equal(plain(batch), dropped(batch))  # evaluation: no effect
        plain.train(), dropped.train()
        torch.manual_seed(0)
        a = dropped(batch)
        torch.manual_seed(0)
        b = dropped(batch)
        assert torch.equal(a, b)  # seeded, reproducible
        assert not torch.allclose(a, plain(batch))  # training: some inputs read as UNK
        # every context token read as UNK; question tokens never (they carry the labels to copy)
        seen = []
        dropped.embed.register_forward_hook(lambda mod, args, out: seen.append(args[0]))
        dropped.cfg.word_dropout = 0.999999
        dropped(batch)
    answer = seen.pop()  # the last call embeds the decoder's answer inputs, which keep their tokens
    assert torch.equal(answer, batch.answer_inputs)
    if variant == "s2s":
        (cq,) = seen
        s = batch.context_question
        assert bool((cq[s.droppable] == 0).all()) and torch.equal(cq[~s.droppable], s.ext[~s.droppable])
    else:
        context, question = seen
        assert bool((context[batch.context.mask] == 0).all()) and torch.equal(question, batch.question.ext)


def test_eos_ends_the_answer():
    model = tiny_model("s2s").eval()
    with torch.no_grad():
        model.vocab_switch.bias.fill_(40.0)
        model.out.bias.fill_(0.0)
        model.out.bias[EOS_ID] = 100.0
    out = model.greedy(collate(random_rows(3), VOCAB), max_len=5)
    assert out.ids.shape[1] == 1 and out.tokens == [[], [], []] and out.texts == ["", "", ""]
    assert out.lengths.tolist() == [1, 1, 1]


@pytest.mark.parametrize("variant", ["satt", "mqan"])
def test_recomputing_the_encoder_gives_the_same_loss_and_gradients(variant):
    b = collate(random_rows(5, seed=4), VOCAB)
    results, saved = [], []
    for recompute in (False, True):
        model = tiny_model(variant, seed=5, recompute_encoder=recompute).train()  # dropout on: same masks
        torch.manual_seed(11)
        saved.append(0)

        def count(t):
            saved[-1] += t.numel()
            return t

        with torch.autograd.graph.saved_tensors_hooks(count, lambda t: t):
            loss = model(b)
        loss.backward()
        results.append((loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}))
    (loss0, grads0), (loss1, grads1) = results
    assert saved[1] < 0.8 * saved[0]  # the arms' activations are not kept
    assert torch.allclose(loss0, loss1, atol=1e-6)
    assert grads0.keys() == grads1.keys()
    for name in grads0:
        assert torch.allclose(grads0[name], grads1[name], atol=1e-6), name


def test_training_mode_applies_every_dropout_the_paper_places(monkeypatch):
    """App. D's dropout, counted in one training forward of MQAN (the reference test runs in eval mode and
    would not see a dropout removed): on the inputs of every LSTM, on C_com, on attention weights, on each
    residual branch and inside the feed-forward layers, on A_proj + PE, on the switch inputs and before W_v."""
    from mqan import cpu_routes

    p = 0.2
    model = tiny_model("mqan", dropout=p).train()
    calls: dict[str, int] = {}
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Dropout):
            assert module.p == p, name
            module.register_forward_hook(lambda m, i, o, name=name: calls.__setitem__(name, calls.get(name, 0) + 1))
    attention_p, original = [], cpu_routes.attention

    def attention(q, k, v, mask, p):
        attention_p.append(p)
        return original(q, k, v, mask, p)

    monkeypatch.setattr(cpu_routes, "attention", attention)
    batch = collate(random_rows(4), VOCAB)
    model(batch)
    T = batch.answer_targets.shape[1]
    expected = {"drop": 4,  # A_proj + PE, the two switch inputs, the input of W_v
                "encode_ind.drop": 2, "lstm.drop": T}
    for arm in ("context_arm", "question_arm"):
        expected.update({f"{arm}.compress.drop": 1, f"{arm}.drop": 1, f"{arm}.final.drop": 1})
        for i in range(2):
            expected.update({f"{arm}.layers.{i}.drop": 2, f"{arm}.layers.{i}.ff.drop": 1})
    for i in range(2):
        expected.update({f"decoder_layers.{i}.drop": 3, f"decoder_layers.{i}.ff.drop": 1})
    assert calls == expected
    assert attention_p == [p] * (2 * 2 + 2 * 2)  # 2 encoder layers per arm, self + context attention per decoder layer
    model.eval()
    attention_p.clear()
    model(batch)
    assert set(attention_p) == {0.0}


@pytest.mark.parametrize("variant", ALL)
def test_the_unpacked_encoder_paths_give_the_same_loss_gradients_and_answers(monkeypatch, variant):
    """BiLSTMs over rows of different lengths run each direction unpacked where measured faster, and the staircase
    where their final state is used (mqan/unpacked.py); forced in float64, the loss, every gradient and the greedy
    answers are those of the packed path."""
    from mqan import unpacked

    model = tiny_model(variant, dropout=0.0).double()
    model.embed.double()
    rows = random_rows(6, seed=8)
    rows[0]["context_tokens"], rows[1]["question_tokens"] = [" copy "], [" or "]  # rows of length 1
    monkeypatch.setattr(unpacked, "path", lambda x, packing, final_state, layers: "packed")
    loss = model(collate(rows, VOCAB))
    grads = torch.autograd.grad(loss, [p for p in model.parameters() if p.requires_grad])
    answers = model.greedy(collate(rows, VOCAB))
    monkeypatch.setattr(unpacked, "path", lambda x, packing, final_state, layers:
                        "staircase" if final_state else "directions")
    loss2 = model(collate(rows, VOCAB))
    grads2 = torch.autograd.grad(loss2, [p for p in model.parameters() if p.requires_grad])
    assert torch.allclose(loss, loss2, rtol=0, atol=1e-12)
    assert all(torch.allclose(g, h, rtol=0, atol=1e-10) for g, h in zip(grads, grads2))
    again = model.greedy(collate(rows, VOCAB))
    assert torch.equal(again.ids, answers.ids) and torch.allclose(again.log_probs, answers.log_probs, rtol=0, atol=1e-12)
