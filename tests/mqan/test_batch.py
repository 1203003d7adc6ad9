from deca.schema import iter_rows
from deca.text import tokenize
from mqan.batch import CONTEXT_SPECIAL, QUESTION_SPECIAL, collate
from mqan.vocab import EOS_ID, INIT_ID, PAD_ID, UNK_ID, Vocab

# generative: specials + the/cat/sat (ids 4..6); full vocabulary also has "mat" (7) and "dog" (8)
VOCAB = Vocab.from_tokens([" the ", " cat ", " sat ", " mat ", " dog "], max_generative=7)


def row(c, q, a, id_="x"):
    return {"id": id_, "task": "t", "context_tokens": c, "question_tokens": q, "answer_tokens": a}


def test_extended_ids_and_targets():
    rows = [row([" the ", " mat ", " zz "], [" sat ", " qq "], [" mat ", " qq ", " the ", " dog "]),
            row([" dog "], [" zz "], [" zz ", " mat ", " yy "])]
    b = collate(rows, VOCAB)
    G = 7
    assert b.generative_size == G and b.size == 2
    # batch-local ids in order of first appearance: context, question, answer, example by example
    assert b.oov_tokens[:3] == [" mat ", " zz ", " qq "]
    X = {tok: G + k for k, tok in enumerate(b.oov_tokens)}
    assert b.context.ext.tolist() == [[4, G, G + 1], [X[" dog "], PAD_ID, PAD_ID]]  # every token keeps its string
    assert b.question.ext.tolist()[0] == [6, G + 2]
    # targets: own-input OOVs copyable; "dog" (in vocab.txt, not generative, not in the inputs) -> UNK
    assert b.answer_targets.tolist()[0] == [G, G + 2, 4, UNK_ID, EOS_ID]
    # example 2: " zz " is in its question; " mat " only in example 1's context -> UNK, not a foreign id
    assert b.answer_targets.tolist()[1] == [G + 1, UNK_ID, UNK_ID, EOS_ID, PAD_ID]
    # decoder inputs keep every answer token's string, even one no source can produce (" dog " here)
    assert b.answer_inputs.tolist()[0] == [INIT_ID, G, G + 2, 4, X[" dog "]]
    assert b.ext_to_tokens(b.answer_inputs[1].tolist(), VOCAB) == [" zz ", " mat ", " yy "]
    assert b.answer_mask.tolist()[1] == [True] * 4 + [False]
    assert b.answer_tokens == 9
    assert b.context.lengths.tolist() == [3, 1] and b.context.mask.tolist()[1] == [True, False, False]
    assert b.context.droppable.tolist()[1] == [True, False, False] and not b.question.droppable.any()


def test_context_question_concatenation_for_baselines():
    b = collate([row([" the "], [" cat "], [])], VOCAB)
    toks = [*CONTEXT_SPECIAL, " the ", *QUESTION_SPECIAL, " cat "]
    assert b.ext_to_tokens(b.context_question.ext[0].tolist(), VOCAB) == toks
    in_context = [False] * len(CONTEXT_SPECIAL) + [True] + [False] * (len(QUESTION_SPECIAL) + 1)
    assert b.context_question.droppable[0].tolist() == in_context
    assert list(CONTEXT_SPECIAL) == tokenize("Context:")


def test_empty_sequences_and_answers():
    b = collate([row([], [" cat "], []), row([" the "], [], None)], VOCAB)
    assert b.context.ext.tolist() == [[PAD_ID], [4]] and b.context.mask.all()
    assert b.context.droppable.tolist() == [[False], [True]]
    assert b.context.lengths.tolist() == [1, 1]
    assert b.answer_targets.tolist() == [[EOS_ID], [EOS_ID]] and b.answer_inputs.tolist() == [[INIT_ID], [INIT_ID]]


def test_mapping_back_to_strings():
    b = collate([row([" the ", " mat ", " zz "], [], [" zz ", " the "])], VOCAB)
    ext = b.answer_targets[0].tolist()
    assert b.ext_to_tokens(ext, VOCAB) == [" zz ", " the "]
    assert b.ext_to_tokens([INIT_ID, 4, PAD_ID, UNK_ID, EOS_ID, 5], VOCAB) == [" the ", " UNK "]


def test_to_device_keeps_lengths_on_cpu():
    b = collate([row([" the "], [" cat "], [" sat "])], VOCAB, device="cpu")
    m = b.to("meta")
    assert m.context.ext.device.type == "meta" and m.answer_targets.device.type == "meta"
    assert m.context.lengths.device.type == "cpu" and m.oov_tokens == b.oov_tokens


def test_collate_real_processed_rows(mini_data):
    processed, vocab_path, tasks = mini_data
    vocab = Vocab.load(vocab_path, 30)
    rows = list(iter_rows(processed, "sst", "train"))[:8]
    b = collate(rows, vocab)
    assert b.size == len(rows) and b.ids == [r["id"] for r in rows]
    for i, r in enumerate(rows):
        n = len(r["context_tokens"])
        assert b.context.lengths[i] == n
        # every context token maps back to its string, generative or batch-local
        assert b.ext_to_tokens(b.context.ext[i, :n].tolist(), vocab) == list(r["context_tokens"])
        assert b.ext_to_tokens(b.answer_targets[i].tolist(), vocab) == list(r["answer_tokens"])
