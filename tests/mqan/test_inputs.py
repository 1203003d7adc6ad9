"""Every input token keeps its identity: features from its string, not from a vocabulary id."""
import numpy as np
import pytest
import torch

from deca.config import ModelConfig
from deca.errors import DataError
from deca.text import tokenize
from mqan.batch import collate
from mqan.checkpoint import load_checkpoint, save_checkpoint
from mqan.inputs import Featurizer, char_ngrams
from mqan.model import build_model, count_parameters
from mqan.vectors import VectorSource
from mqan.vocab import UNK_ID, Vocab

torch.set_num_threads(1)
VOCAB = Vocab.from_tokens([" the ", " cat ", " sat ", " is ", " it ", " good ", " bad ", " ? "], 50)
WORDS = ["the", "cat", "zebra", "okapi", "good", "bad"]
VECTORS = VectorSource.from_arrays("test-6x4", WORDS, np.arange(24, dtype=np.float32).reshape(6, 4) + 1)


def cfg(**kw):
    base = dict(dimension=8, ff_hidden=8, heads=1, transformer_layers=1, max_generative_vocab=50,
                word_vectors=None, char_ngram_dim=6, char_ngram_buckets=97, embedding_dim=0)
    return ModelConfig(**{**base, **kw})


def model_with(vectors=VECTORS, vocab=VOCAB, **kw):
    torch.manual_seed(0)
    return build_model(cfg(**kw), vocab, word_vectors=vectors)


def encoder_inputs(model, batch, decode=False):
    """The embeddings that reach W1 (Eq. 15), captured from a real forward pass or greedy decoding."""
    seen = []
    hook = model.enc_proj.register_forward_hook(lambda m, args, out: seen.append(args[0].detach()))
    try:
        model.greedy(batch, 2) if decode else model(batch)
    finally:
        hook.remove()
    return seen  # [context, question]


def row(context, question, answer=""):
    return {"context_tokens": tokenize(context), "question_tokens": tokenize(question),
            "answer_tokens": tokenize(answer)}


@pytest.mark.parametrize("decode", [False, True])
def test_a_token_outside_the_vocabulary_gets_its_vector_in_training_and_prediction(decode):
    model = model_with()
    assert " zebra " not in VOCAB.stoi and "zebra" in VECTORS
    batch = collate([row("the zebra sat", "is it good or bad ?", "good")], VOCAB)
    context, question = encoder_inputs(model, batch, decode)
    zebra, the = context[0, 1, :4], context[0, 0, :4]
    assert zebra.tolist() == VECTORS.lookup(["zebra"])[0].tolist()
    assert the.tolist() == VECTORS.lookup(["the"])[0].tolist()
    assert question[0, 0, :4].tolist() == [0, 0, 0, 0]  # 'is' has no vector: zeros, as in the paper


def test_new_text_at_prediction_time_is_featurized_from_its_string():
    """A token first met after `deca prepare` (here 'okapi') has its vector in a second, unrelated batch."""
    model = model_with().eval()
    first = collate([row("the cat sat", "is it good ?")], VOCAB)
    later = collate([row("an okapi sat", "is it good ?")], VOCAB)
    encoder_inputs(model, first, decode=True)
    context, _ = encoder_inputs(model, later, decode=True)
    assert context[0, 1, :4].tolist() == VECTORS.lookup(["okapi"])[0].tolist()


def test_two_distinct_unseen_tokens_get_different_char_features():
    model = model_with(vectors=None, embedding_dim=4)
    batch = collate([row("florp blivet", "?")], VOCAB)
    context, _ = encoder_inputs(model, batch)
    florp, blivet = context[0, 0], context[0, 1]
    assert torch.equal(florp[-4:], blivet[-4:])  # both share the UNK row of the trained word vectors (last) ...
    assert not torch.equal(florp[:6], blivet[:6])  # ... yet their char n-gram features (first) differ
    grams = Featurizer(buckets=97).grams([" florp "])
    assert (grams[0] < 97).sum() == len(char_ngrams("florp"))


def test_char_features_come_from_the_string_not_the_id():
    """The same string gets the same n-grams whether it is in the generative vocabulary or batch-local."""
    vocab = Vocab(VOCAB.itos, max_generative=6)  # generative: specials + ' the ', ' cat '
    model = model_with(vectors=None, vocab=vocab)
    small = collate([row("sat", "?")], vocab)
    assert small.context.ext[0, 0] >= small.generative_size
    full = model_with(vectors=None)
    in_vocab = collate([row("sat", "?")], VOCAB)
    assert in_vocab.context.ext[0, 0] < in_vocab.generative_size
    a = encoder_inputs(model, small)[0][0, 0]
    b = encoder_inputs(full, in_vocab)[0][0, 0]
    assert torch.allclose(a, b)


def test_frozen_vectors_and_trained_char_ngrams_together():
    model = model_with(char_ngram_dim=6, embedding_dim=3)
    assert model.embed.dim == 4 + 6 + 3
    names = {n for n, _ in model.named_parameters()}
    assert {"embed.char", "embed.weight"} <= names
    assert not any("gen_frozen" in n for n in model.state_dict())  # frozen features are not saved
    base = model_with(char_ngram_dim=0, embedding_dim=0)
    assert count_parameters(model) - count_parameters(base) == 98 * 6 + VOCAB.generative_size * 3 + 9 * 8 * 2


def test_jmt_char_file_is_the_mean_of_the_ngrams_found():
    chars = VectorSource.from_arrays("jmt", ["2gram-ab", "3gram-ab#END#", "2gram-zz"], [[1, 0], [3, 2], [5, 5]])
    f = Featurizer(word=VECTORS, char=chars)
    out = f.frozen([" ab ", " q ", " UNK ", " the "])
    assert out.shape == (4, 6)
    assert out[0].tolist() == [2, 1, 0, 0, 0, 0]  # mean of the two n-grams found, then no word vector
    assert out[1].tolist() == [0] * 6 and out[2].tolist() == [0] * 6  # none found / a special
    assert out[3, 2:].tolist() == VECTORS.lookup(["the"])[0].tolist()


def test_word_dropout_never_touches_question_positions():
    model = model_with(word_dropout=0.95, embedding_dim=4).train()
    batch = collate([row("the cat sat good " * 5, "is it good or bad ?")], VOCAB)
    context, question = encoder_inputs(model, batch)
    model.eval()
    clean_context, clean_question = encoder_inputs(model, batch)
    assert torch.equal(question, clean_question)
    unk = model.embed(torch.tensor([[UNK_ID]]), {})[0, 0]
    dropped = (context[0] == unk).all(-1)
    assert dropped.float().mean() > 0.7 and not torch.equal(context, clean_context)


def test_word_dropout_in_the_concatenation_hides_context_tokens_only():
    model = model_with(variant="s2s", word_dropout=0.95, embedding_dim=4).train()
    batch = collate([row("the cat sat " * 6, "is it good ?")], VOCAB)
    (cq,) = encoder_inputs(model, batch)
    model.eval()
    (clean,) = encoder_inputs(model, batch)
    keep = ~batch.context_question.droppable[0]
    assert keep.sum() == len(tokenize("Context:")) + len(tokenize("Question:")) + len(tokenize("is it good ?"))
    assert torch.equal(cq[0, keep], clean[0, keep]) and not torch.equal(cq, clean)


def test_checkpoint_records_the_vector_source_and_refuses_another(tmp_path):
    model = model_with()
    path = save_checkpoint(tmp_path / "m.pt", model)
    loaded, _ = load_checkpoint(path, VOCAB, word_vectors=VECTORS)
    assert torch.equal(loaded.embed.gen_frozen, model.embed.gen_frozen)
    other = VectorSource.from_arrays("test-6x4", WORDS, np.ones((6, 4), dtype=np.float32))
    with pytest.raises(DataError, match="trained with test-6x4") as e:
        load_checkpoint(path, VOCAB, word_vectors=other)
    assert "model.word_vectors" in str(e.value)
    none = save_checkpoint(tmp_path / "none.pt", model_with(vectors=None))
    with pytest.raises(DataError, match="trained with none"):
        load_checkpoint(none, VOCAB, word_vectors=VECTORS)


def test_no_input_features_is_refused():
    with pytest.raises(ValueError, match="no input features"):
        model_with(vectors=None, char_ngram_dim=0, embedding_dim=0)


def test_trained_word_vectors_cover_the_generative_vocabulary_only():
    model = model_with(vectors=None, char_ngram_dim=0, embedding_dim=6, vocab=Vocab(VOCAB.itos, max_generative=5))
    assert model.embed.weight.shape == (5, 6)
    e = model.embed(torch.tensor([[4, 5, 6, 0]]), {"frozen": torch.zeros(2, 0)})
    assert torch.equal(e[0, 1], e[0, 3]) and torch.equal(e[0, 2], e[0, 3])  # batch-local tokens share UNK's row
    assert not torch.equal(e[0, 0], e[0, 3])
