"""Figure 3 (eval/sources.py): which source answers, from per-token switch weights; in the report,
metrics.json and the metric names. Every expected number here is computed by hand."""
from __future__ import annotations

import math

import pytest

from eval.api import metric_values
from eval.report import markdown, write_plots
from eval.score import metrics_document
from eval.sources import csv_text, markdown_table, metric_items, source_values, stacked_chart, summarize, wrap

# Four answer tokens in two answers (and an empty answer): largest = vocabulary, vocabulary, context, question.
WEIGHTS = [[[0.9, 0.05, 0.05], [0.8, 0.1, 0.1]], [[0.05, 0.9, 0.05], [0.1, 0.1, 0.8]], []]


def test_shares_and_mean_weights_by_hand():
    s = summarize(WEIGHTS)
    assert s["answers"] == 3 and s["tokens"] == 4
    assert s["largest"] == {"vocabulary": 2, "context": 1, "question": 1}
    assert s["share"] == pytest.approx({"vocabulary": 50.0, "context": 25.0, "question": 25.0})
    # (0.9 + 0.8 + 0.05 + 0.1) / 4, (0.05 + 0.1 + 0.9 + 0.1) / 4, (0.05 + 0.1 + 0.05 + 0.8) / 4
    assert s["mean_weight"] == pytest.approx({"vocabulary": 0.4625, "context": 0.2875, "question": 0.25})
    assert sum(s["share"].values()) == pytest.approx(100.0)


def test_thirds_and_ties_go_to_the_earlier_source():
    s = summarize([[[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.2, 0.3, 0.5]]])
    assert s["share"] == pytest.approx({"vocabulary": 100 / 3, "context": 100 / 3, "question": 100 / 3})
    assert s["mean_weight"] == pytest.approx({"vocabulary": 1.0 / 3, "context": 1.1 / 3, "question": 0.9 / 3})
    ties = summarize([[[0.5, 0.5, 0.0], [0.1, 0.45, 0.45], [0.0, 0.5, 0.5]]])
    assert ties["largest"] == {"vocabulary": 1, "context": 2, "question": 0}


def test_no_answer_tokens_gives_no_shares():
    s = summarize([[], []])
    assert s == {"answers": 2, "tokens": 0, "largest": {"vocabulary": 0, "context": 0, "question": 0},
                 "share": {}, "mean_weight": {}}
    assert metric_items(s) == {"source/tokens": 0.0}
    assert "| sst | 0 | - | - | - |" in markdown_table({"sst": s})


@pytest.mark.parametrize("bad, message", [
    ([[[0.5, 0.5]]], r"answer 0, token 0: expected 3 source weights"),
    ([[], [[0.2, 0.2, 0.6], [0.5, 0.4, 0.4]]], r"answer 1, token 1: source weights must sum to 1"),
    ([[[math.nan, 0.5, 0.5]]], r"answer 0, token 0: .*finite and non-negative"),
    ([[[1.5, -0.5, 0.0]]], r"finite and non-negative"),
])
def test_bad_weights_are_refused_naming_the_token(bad, message):
    with pytest.raises(ValueError, match=message):
        summarize(bad)


def _result(task, value, weights):
    return {"task": task, "split": "validation", "n": len(weights), "metrics": {"em": value},
            "headline": {"name": "em", "value": value}, "sources": summarize(weights)}


def scored_two_tasks():
    results = {"schema": _result("schema", 50.0, WEIGHTS),
               "sst": _result("sst", 80.0, [[[0.1, 0.1, 0.8]], [[0.2, 0.1, 0.7]]])}
    return {"split": "validation", "decascore": 130.0, "tasks": ["sst", "schema"], "partial": True,
            "missing": [], "max": 1000.0, "results": results}


def test_metric_names_and_metrics_json_leave_the_decascore_alone():
    scored = scored_two_tasks()
    values = {**metric_values("validation", scored["results"]), **source_values("validation", scored["results"])}
    assert values["validation/schema/source/vocabulary_share"] == pytest.approx(50.0)
    assert values["validation/schema/source/context_mean_weight"] == pytest.approx(0.2875)
    assert values["validation/sst/source/question_share"] == pytest.approx(100.0)
    assert values["validation/sst/source/tokens"] == 2.0
    assert values["validation/decascore"] == pytest.approx(130.0)  # headlines only
    doc = metrics_document(scored)
    source = doc["tasks"]["schema"]["source"]
    assert source == {"tokens": 4, "vocabulary_share": 50.0, "context_share": 25.0, "question_share": 25.0,
                      "vocabulary_mean_weight": 0.4625, "context_mean_weight": 0.2875, "question_mean_weight": 0.25}
    assert doc["tasks"]["schema"]["headline"] == 50.0 and "source" not in metrics_document(
        {**scored, "results": {"sst": {k: v for k, v in scored["results"]["sst"].items() if k != "sources"}}}
    )["tasks"]["sst"]


def test_report_table_csv_and_charts(tmp_path):
    scored = scored_two_tasks()
    text = markdown(scored)
    table = text.split("## Which source answers (Figure 3)")[1]
    assert table.index("| sst | 2 |") < table.index("| schema | 4 |")  # the paper's task order
    assert "| schema | 4 | 50.0% (0.46) | 25.0% (0.29) | 25.0% (0.25) |" in table
    assert "| sst | 2 | 0.0% (0.15) | 0.0% (0.10) | 100.0% (0.75) |" in table
    assert csv_text({"sst": scored["results"]["sst"]["sources"]}) == (
        "task,tokens,vocabulary_share,context_share,question_share,"
        "vocabulary_mean_weight,context_mean_weight,question_mean_weight\n"
        "sst,2,0.0000,0.0000,100.0000,0.150000,0.100000,0.750000\n")
    written = write_plots(scored, tmp_path / "plots")
    names = sorted(p.name for p in written)
    assert {"figure3.csv", "figure3.png"} <= set(names)
    assert (tmp_path / "plots" / "figure3.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "plots" / "figure3.csv").read_text().splitlines()[1].startswith("sst,2,")
    no_sources = {**scored, "results": {t: {k: v for k, v in r.items() if k != "sources"}
                                        for t, r in scored["results"].items()}}
    assert "Figure 3" not in markdown(no_sources)  # `deca score` has no weights: no table
    assert "figure3.png" not in {p.name for p in write_plots(no_sources, tmp_path / "plain")}
    assert stacked_chart({}, tmp_path / "empty.png").read_bytes()[:4] == b"\x89PNG"


def test_long_task_names_are_wrapped_on_the_axis():
    assert wrap("sst") == "sst" and wrap("QA-SRL") == "QA-SRL"
    assert wrap("sst.supportive_unsupportive") == "sst.\nsupportive_\nunsupportive"
    assert wrap("cnn_dailymail").replace("\n", "") == "cnn_dailymail"
