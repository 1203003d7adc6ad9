"""`deca compare --runs-a/--runs-b` (eval/paired.py), the baselines (eval/verdict.py) and per-example
statistics through eval.api.score_task and eval.score.add_intervals."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support import write_run
from deca.cli import main
from deca.errors import DataError
from deca.registry import DECANLP
from eval import paired
from eval.labels import TASK_LABELS
from eval.stats import MAX_REPLICATES, MIN_REPLICATES
from eval.api import score_task
from eval.floors import majority, random_candidate
from eval.verdict import baseline
from eval.score import add_intervals, metrics_document


def sst_pair(tmp_path, fixes: int = 60, breaks: int = 10, n: int = 800):
    rng = np.random.default_rng(0)
    a = rng.random(n) < 0.8
    b = a.copy()
    b[np.flatnonzero(~a)[:fixes]] = True
    b[np.flatnonzero(a)[:breaks]] = False
    answers = ["positive" if x else "negative" for x in rng.random(n) < 0.55]
    return (write_run(tmp_path / "a", "sst", a, answers),
            write_run(tmp_path / "b", "sst", b, answers, shuffle=1), answers)  # b's file in another order


def test_cli_prints_differences_intervals_p_values_and_verdicts(tmp_path, capsys):
    a, b, answers = sst_pair(tmp_path)
    assert main(["compare", "--runs-a", str(a), "--runs-b", str(b), "--replicates", "500",
                 "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert "b - a [95%]" in out and "McNemar p" in out
    sst = next(line for line in out.splitlines() if line.startswith("SST"))
    assert "+6.2 [" in sst and sst.rstrip().endswith("reproduced")
    decascore = next(line for line in out.splitlines() if line.startswith("partial decaScore (1 of 10 tasks)"))
    assert "+6.2" in decascore and decascore.rstrip().endswith("reproduced")
    doc = json.loads((tmp_path / "cmp.json").read_text())
    assert doc["rows"]["sst"]["mcnemar"] < 1e-6 and doc["rows"]["sst"]["baseline"] == majority(answers)
    assert main(["compare", "--runs-a", str(a), "--runs-b", str(b), "--expect", "lower", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"]["sst"]["verdict"] == "opposite"


def test_a_side_at_its_majority_baseline_is_not_tested(tmp_path):
    answers = ["positive"] * 700 + ["negative"] * 100  # majority EM 87.5
    a = write_run(tmp_path / "a", "sst", np.arange(800) < 700, answers)
    b = write_run(tmp_path / "b", "sst", np.arange(800) < 760, answers)
    row = paired.paired([a], [b], replicates=300)["rows"]["sst"]
    assert row["baseline"] == 87.5 and row["verdict"] == "not tested"


def test_groups_of_seed_runs_and_mismatched_examples(tmp_path):
    rng = np.random.default_rng(2)
    answers = ["positive"] * 400 + ["negative"] * 400
    a = [write_run(tmp_path / f"a{s}", "sst", rng.random(800) < 0.8, answers) for s in range(3)]
    b = [write_run(tmp_path / f"b{s}", "sst", rng.random(800) < 0.8, answers) for s in range(3)]
    row = paired.paired(a, b, replicates=300)["rows"]["sst"]
    assert row["diff"]["low"] < 0 < row["diff"]["high"] and row["verdict"] == "inconclusive"
    short = write_run(tmp_path / "short", "sst", np.ones(799, bool), answers[:799])
    with pytest.raises(DataError, match="other examples"):
        paired.paired(a, [short], replicates=300)


def test_records_without_statistics_name_the_line_and_the_fix(tmp_path, capsys):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "sst.jsonl").write_text('{"id": "1", "prediction": "positive"}\n', encoding="utf-8")
    with pytest.raises(DataError, match="no per-example statistics") as info:
        paired.read_run(folder)
    assert "deca evaluate" in str(info.value)
    assert main(["compare", "--runs-a", str(folder)]) != 0
    assert "error:" in capsys.readouterr().err


def rows(answers, questions=None, contexts=None):
    return [{"id": str(i), "answer": a, "answers": [a], "question": (questions or ["?"] * len(answers))[i],
             "context": (contexts or ["x"] * len(answers))[i]} for i, a in enumerate(answers)]


def test_baselines_from_the_data():
    assert majority(["positive", "negative", "positive", "positive"]) == 75.0
    questions = ["who was angry? the man or the dog?", "who ran? the cat or the dog?", "what is it? a or b?"]
    assert random_candidate(["the dog", "the cat", "c"], questions) is None  # 2 of 3 name their gold
    assert random_candidate(["the dog", "the cat"], questions[:2]) == 50.0
    assert baseline("schema", rows(["the dog", "the cat"], questions[:2])) == 50.0
    assert baseline("sst", rows(["positive", "negative", "negative"])) == pytest.approx(200 / 3)
    # nF1 has a floor too: copying the context scores the answers it holds
    squad = rows(["the red fox", "a dog"], contexts=["the red fox. it ran.", "a dog barked."])
    assert baseline("squad", squad) > 50.0


def test_score_task_keeps_statistics_and_intervals_reach_the_metrics_document():
    rows = [{"id": str(i), "answer": a, "answers": [a]} for i, a in enumerate(["positive", "negative"] * 50)]
    preds = {str(i): ("positive" if i % 3 else "negative") for i in range(100)}
    result = score_task("sst", preds, rows, examples=True)
    values = result["examples"]["values"]
    assert values.shape == (100, 1) and values.mean() == pytest.approx(result["headline"]["value"])
    scored = {"split": "validation", "decascore": result["headline"]["value"], "tasks": ["sst"], "partial": True,
              "results": {"sst": {**result, "split": "validation"}}}
    doc = metrics_document(add_intervals(scored, replicates=300))
    low, high = doc["tasks"]["sst"]["interval"]
    assert low < doc["tasks"]["sst"]["headline"] < high and doc["decascore_interval"] == [low, high]


def write_contamination(folder, flagged: dict[str, list[str]]):
    """A `deca contamination` output folder flagging these ids per ``<task>/<split>`` (its ids file)."""
    from deca.contamination import FORMAT, IDS_FILE

    folder.mkdir(parents=True)
    splits = {key: {"any": ids, "by_field": {}, "by_train_task": {}} for key, ids in flagged.items()}
    (folder / IDS_FILE).write_text(json.dumps({"format": FORMAT, "n": 13, "splits": splits}), encoding="utf-8")
    return folder


def test_clean_columns_leave_out_the_flagged_examples(tmp_path, capsys):
    """b fixes 60 of a's errors; the contamination output flags 50 of the fixed examples: on the clean subset
    b - a is 10 fixes less 10 breaks over 750 examples, about 0."""
    a, b, _ = sst_pair(tmp_path)
    a_correct = [json.loads(line)["stats"][0] > 0 for line in (a / "sst.jsonl").read_text().splitlines()]
    fixed = [f"sst/{i}" for i, ok in enumerate(a_correct) if not ok][:50]
    cont = write_contamination(tmp_path / "cont", {"sst/validation": fixed, "squad/validation": []})
    result = paired.paired([a], [b], replicates=300, flagged={"sst/validation": set(fixed)}, split="validation",
                           source=cont)
    clean = result["clean"]["rows"]
    assert clean["sst"]["n"] == 750 and clean["sst"]["excluded"] == 50
    assert result["rows"]["sst"]["diff"]["value"] == pytest.approx(100 * 50 / 800)
    assert clean["sst"]["diff"]["value"] == pytest.approx(0.0, abs=1e-9)
    assert clean["decascore"]["diff"]["value"] == pytest.approx(0.0, abs=1e-9) and clean["decascore"]["excluded"] == 50
    assert main(["compare", "--runs-a", str(a), "--runs-b", str(b), "--replicates", "200",
                 "--contamination", str(cont)]) == 0
    out = capsys.readouterr().out
    assert "clean b - a [95%]" in out and f"({cont})" in out
    sst = next(line for line in out.splitlines() if line.startswith("SST"))
    assert "+0.0 [" in sst and "50 of 800" in sst
    # another split than the output covers: not checked; 'none': no clean columns; a folder that is not one
    assert main(["compare", "--runs-a", str(a), "--runs-b", str(b), "--replicates", "200", "--split", "test",
                 "--contamination", str(cont)]) == 0
    assert "not checked" in capsys.readouterr().out
    assert main(["compare", "--runs-a", str(a), "--runs-b", str(b), "--replicates", "200",
                 "--contamination", "none"]) == 0
    assert "clean" not in capsys.readouterr().out
    assert main(["compare", "--runs-a", str(a), "--runs-b", str(b), "--contamination", str(tmp_path / "nothing")]) != 0
    assert str(tmp_path / "nothing" / "contaminated_ids.json") in capsys.readouterr().err


def test_runs_of_other_tasks_name_the_tasks_dropped_and_the_partial_sum(tmp_path, capsys):
    """Issue 42: the common tasks were compared silently and their sum was labelled "decaScore"."""
    a, b, answers = sst_pair(tmp_path)
    write_run(a, "multinli.in.out", np.ones(800, bool), answers)  # on side a only
    write_run(b, "snli", np.ones(800, bool), answers)  # on side b only
    assert main(["compare", "--runs-a", str(a), "--runs-b", str(b), "--replicates", "200", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["rows"]) == {"sst", "decascore"}
    assert doc["dropped"] == {"multinli.in.out": ["b"], "snli": ["a"]}
    assert doc["decascore"] == {"tasks": ["sst"], "partial": True}
    assert main(["compare", "--runs-a", str(a), "--runs-b", str(b), "--replicates", "200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert not any(line.startswith("decaScore") for line in lines)
    assert any(line.startswith("partial decaScore (1 of 10 tasks)  ") for line in lines)
    assert "partial decaScore (1 of 10 tasks): the sum over sst only, not a decaScore" in lines
    assert (f"not compared, not in every run of both sides: {TASK_LABELS['multinli.in.out']} (multinli.in.out: "
            f"missing from a run of b); {TASK_LABELS.get('snli', 'snli')} (snli: missing from a run of a)") in lines
    # a seed run of side a without MNLI: dropped for side a too
    a2 = write_run(tmp_path / "a2", "sst", np.ones(800, bool), answers)
    assert paired.paired([a, a2], [b], replicates=200)["dropped"] == {"multinli.in.out": ["a", "b"], "snli": ["a"]}
    assert paired.decascore_name({"tasks": list(DECANLP), "partial": False}) == "decaScore"


@pytest.mark.parametrize("replicates", [0, 1, MIN_REPLICATES - 1, MAX_REPLICATES + 1, 100_000_000])
def test_compare_refuses_replicates_out_of_bounds_in_one_line(tmp_path, capsys, monkeypatch, replicates):
    """Issue 42: --replicates 100000000 grew to 3 GB in 14 s; the bounds are the gate's (eval/stats.py)."""
    a, b, _ = sst_pair(tmp_path)
    monkeypatch.setattr(paired, "compare", lambda *args, **kwargs: pytest.fail("resampled before the check"))
    assert main(["compare", "--runs-a", str(a), "--runs-b", str(b), "--replicates", str(replicates)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: --replicates {replicates}: must be between {MIN_REPLICATES} (enough resamples for the "
                   f"ends of a 95% interval) and {MAX_REPLICATES:,} (what the resamples may take in memory)"]
