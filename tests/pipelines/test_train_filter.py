"""prepare.train_filter: the original implementation's training filters, off by default (the paper)."""
from deca.checks import load_params
from deca.config import TrainFilterConfig
from deca.registry import Dropped, Example, get_task
from pipelines.rows import to_row

SST = get_task("sst")


def row(context, answer, split="train", f=None):
    return to_row(SST, split, Example(id="1", context=context, question="q ?", answer=answer), train_filter=f)


def test_default_is_the_paper_no_filter():
    assert load_params().prepare.train_filter == TrainFilterConfig()  # params.yaml matches the dataclass
    long = " ".join(["word"] * 500)
    assert isinstance(row(long, long, f=TrainFilterConfig()), dict)


def test_the_original_filters_drop_training_rows_only_with_a_reason():
    original = TrainFilterConfig(max_context_tokens=400, max_answer_tokens=50, drop_empty=True)
    long = " ".join(["word"] * 401)
    dropped = row(long, "positive", f=original)
    assert isinstance(dropped, Dropped) and dropped.reason == "train_filter_context_too_long"
    assert "401 context tokens > 400" in dropped.detail
    assert row("a b", " ".join(["x"] * 51), f=original).reason == "train_filter_answer_too_long"
    assert row("", "positive", f=original).reason == "train_filter_empty"
    assert isinstance(row(" ".join(["word"] * 400), "positive", f=original), dict)  # at the limit: kept
    assert isinstance(row(long, "positive", split="validation", f=original), dict)  # evaluation splits untouched
