"""experiments/results/zero_shot.py: renamed-label EMs within reach of the floor are 'not tested', wholly
below it 'fails'."""
from __future__ import annotations

from experiments.results import zero_shot


def test_the_committed_groups_below_the_floor_fail():
    """The Table 3 models answer 0.7-10 EM on both renamings and SST alone (experiments/grid.sh's five seeds)
    0.0 on happy/angry and 8.8 [0.0, 26.7] on supportive/unsupportive: wholly below the 50.9 majority floor, they
    fail; SST + MWSC's reach it."""
    floors = zero_shot.records.floors()
    text, heads = zero_shot.verdicts(zero_shot.records.load("zero_shot")["groups"], floors)
    assert heads == ["fails", "fails", "not tested", "not tested", "fails", "fails"]
    assert "50.9 (constant answer)" in text
    assert zero_shot.summary(heads) == "Verdicts: 4 fails, 2 not tested."


def test_a_group_clear_of_the_floor_gets_a_verdict(monkeypatch):
    good = {"sst": {"em": 82.0}, "sst.happy_angry": {"em": 80.0}, "sst.supportive_unsupportive": {"em": 81.0}}
    group = {"name": "g", "record": "x", "models": [["a", "a"], ["b", "b"], ["c", "c"]]}
    monkeypatch.setattr(zero_shot, "models", lambda g: [(k, {t: {"em": v["em"] + i * 0.1} for t, v in good.items()})
                                                         for i, k in enumerate("abc")])
    floors = {t: {"floor": 50.0, "answerer": "random candidate"} for t in zero_shot.RENAMED}
    _, heads = zero_shot.verdicts([group], floors)
    assert "not tested" not in heads
    assert zero_shot.summary(heads).startswith("Verdicts:")


def test_the_sst_mwsc_sentences_come_from_the_figures():
    """Each model's share of its most frequent renamed answer (seed 123's happy/angry, from its figures) beside the
    gold majority's 50.9%, instead of saying every model leans; the stops and the first-word comparison too."""
    groups, floors = zero_shot.records.load("zero_shot")["groups"], zero_shot.records.floors()
    lean = zero_shot.lean_text(groups, "SST + MWSC", floors)
    top = zero_shot.records.load("zero_shot_sst_mwsc")["zero-shot-sst-schema-s123"]["sst.happy_angry"]["top answers"]
    share = 100 * top[0][1] / floors["sst.happy_angry"]["examples"]  # of the 872 reviews
    assert f'{share:.1f}% ("{top[0][0]}", seed 123)' in lean and "against the gold majority label's 50.9%" in lean
    assert zero_shot.stops_text(groups, "SST + MWSC") == "Every model stops after one word on every renamed answer"
    assert zero_shot.near_trained(groups, "SST alone", "sst.supportive_unsupportive") == (
        "within 0.8 points of each model's EM asked as trained (81.2-82.3)")


def test_the_sentences_change_with_the_figures(monkeypatch):
    figures = {"sst": {"em": 80.0}, "sst.happy_angry": {"stops": 60.0, "first word right": 50.0,
                                                        "top answers": [["happy", 436]]},
               "sst.supportive_unsupportive": {"stops": 100.0, "first word right": 70.0,
                                               "top answers": [["supportive", 872]]}}
    monkeypatch.setattr(zero_shot, "models", lambda g: [("m, seed 1", figures)])
    groups = [{"name": "g", "models": [["m", "m, seed 1"]]}]
    floors = {t: {"examples": 872, "floors": {"constant answer": 50.9}} for t in zero_shot.RENAMED}
    assert zero_shot.stops_text(groups, "g") == "The models stop after one word on 60.0-100.0% of their renamed answers"
    assert '50.0% ("happy", seed 1)' in zero_shot.lean_text(groups, "g", floors)
    assert zero_shot.near_trained(groups, "g", "sst.happy_angry").startswith("within 30.0 points")


def test_the_first_word_shares_stand_beside_a_constant_first_word(monkeypatch):
    """A model that answers "angry x100" to every review puts the right label first for the gold share of
    "angry": the page once quoted 0.0-66.1% with no floor beside it while four of five models were at or below it."""
    def model(first, top):
        return {"sst.happy_angry": {"first word right": first, "top answers": top},
                "sst.supportive_unsupportive": {"first word right": 81.0, "top answers": [["supportive", 400]]}}

    found = [("m, seed 1", model(49.1, [["angry x100", 872]])), ("m, seed 5", model(66.1, [["happy x2", 531]])),
             ("m, seed 7", model(0.0, [["is x2", 309]]))]
    monkeypatch.setattr(zero_shot, "models", lambda g: found)
    groups = [{"name": "g", "models": [["m", "m"]] * 3}]
    floors = {t: {"examples": 872, "floors": {"constant answer": 50.9}} for t in zero_shot.RENAMED}
    said = zero_shot.first_word_floor(groups, "g", "sst.happy_angry", floors)
    assert said["floor"] == "50.9" and said["short"] == "1 of 3 models above it"
    assert said["above"] == (
        'only 1 of the 3 models lies above it; 1 gives one answer to every review (seed 1 "angry x100")')
    assert zero_shot.first_word_floor(groups, "g", "sst.supportive_unsupportive", floors) == {
        "floor": "50.9", "above": "every model lies above it", "short": "3 of 3 models above it", "gives": ""}


def test_the_readme_line_says_verdicts_in_lower_case():
    """The index line reads '**Zero-shot renamed labels**: verdicts 4 fails, ...', not a capitalised sentence after
    the colon (summary() is the page's own sentence)."""
    from experiments.results import readme

    assert zero_shot.tally(["fails", "not tested", "fails"]) == "2 fails, 1 not tested"
    text = dict(readme.INDEX)["zero_shot.md"]
    assert "**: verdicts {{verdict_tally}}." in text and "{{verdict_summary}}" not in text
    assert "{{constant_first_word}}" in text and "{{first_alone_above}}" in text


def test_the_table3_sentence_counts_answers_that_start_with_a_label_word_as_a_lower_bound():
    """The page once said the Table 3 models "answer from the review", quoting the gold-label first-word share as
    "the new label"; SQuAD first seed 123 gives "happy" to 338 reviews and "supportive" to 494."""
    groups, floors = zero_shot.records.load("zero_shot")["groups"], zero_shot.records.floors()
    said = zero_shot.label_first_text(groups, "Table 3 five-task models", floors)
    assert "SQuAD first, seed 123 ≥ 38.8% and ≥ 57.0%" in said and "curriculum, seed 7 ≥ 26.0% and ≥ 21.3%" in said
    assert "(lower bounds: the record keeps each model's 5 most frequent answers)" in said
    assert ('start with neither label, over the 6 models and both renamings (at least: from the top 5 of each '
            'model): "it" ') in said  # sums over each model's kept answers: lower bounds too (audit4 4-Z3)
    template = zero_shot.records.ROOT / "experiments/results/templates/zero_shot.md"
    assert "answer from the review" not in template.read_text(encoding="utf-8")


def test_a_label_word_first_counts_the_first_word_only():
    figures = {"sst.happy_angry": {"top answers": [["angry or", 54], ["happy", 10], ["it", 30], ["unhappy", 5]]}}
    assert zero_shot.label_words("sst.supportive_unsupportive") == ("supportive", "unsupportive")
    assert zero_shot.label_first(figures, "sst.happy_angry", 200) == 32.0  # (54 + 10) of 200


def test_the_decoding_limit_is_the_records():
    record = zero_shot.records.load("zero_shot")
    assert zero_shot.decoding(record).startswith("greedy, up to the model's 100-step limit (`model.max_answer_length`)")
    assert "step limit (not recorded)" in zero_shot.decoding({})
