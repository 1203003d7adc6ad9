"""Per-split statistics (pipelines/stats.py): the named accumulator and its combine."""
from pipelines.stats import SplitStatsFn, SplitTotals, empty_split


def test_totals_count_examples_sums_and_maxima():
    a = SplitTotals().add((3, 1, 2)).add((5, 1, 0))
    assert (a.examples, a.sums, a.maxima, a.tokens) == (2, {"context": 8, "question": 2, "answer": 2},
                                                        {"context": 5, "question": 1, "answer": 2}, 12)
    b = SplitTotals().add((1, 4, 1))
    assert a.merge(b) is a and a.examples == 3 and a.maxima == {"context": 5, "question": 4, "answer": 2}


def test_combine_gives_the_stats_json_entry():
    fn = SplitStatsFn()
    parts = [SplitTotals().add((3, 1, 2)), SplitTotals().add((4, 2, 1)).add((2, 2, 1))]
    acc = fn.merge_accumulators([fn.add_input(fn.create_accumulator(), parts[0]),
                                 fn.add_input(fn.create_accumulator(), parts[1])])
    assert fn.extract_output(acc) == {"examples": 3, "tokens": {
        "context": {"sum": 9, "mean": 3.0, "max": 4}, "question": {"sum": 5, "mean": 1.667, "max": 2},
        "answer": {"sum": 4, "mean": 1.333, "max": 2}}}
    assert empty_split() == {"examples": 0, "tokens": {f: {"sum": 0, "mean": 0.0, "max": 0}
                                                       for f in ("context", "question", "answer")}}
