"""docs/results/gpu_floor.md is what its records give, and the generator says when a figure has no record."""
import json
import shutil

from experiments.results import gpu_floor as report
from experiments.results import pages


def test_the_committed_page_is_regenerated_from_its_records_without_a_difference():
    assert report.PAGE.read_text(encoding="utf-8") == report.render() == pages.render("docs/results/gpu_floor.md")


def test_a_missing_record_says_not_measured(tmp_path):
    records = tmp_path / "gpu_floor"
    shutil.copytree(report.RECORDS, records)
    (records / "run3" / "speedcheck_results.jsonl").unlink()
    text = report.render(records)
    assert "| training examples/s against the original, SQuAD | not measured |" in text and text != report.render()


def test_side_by_side_ratios_are_per_round_and_their_median():
    agg = report.side_by_side(report.RECORDS / "run1")[("fp32", "train squad")]
    rows = [json.loads(line) for line in (report.RECORDS / "run1" / "speedcheck_results.jsonl").read_text().splitlines()]
    r1 = {r["impl"]: r["examples_per_s"] for r in rows if r["tag"] == "fp32/r1" and r["mode"] == "train" and r["task"] == "squad"}
    assert agg["ratio"][0] == r1["project"] / r1["original"] and len(agg["ratio"]) == 2


def test_each_runs_commit_is_said_as_env_txt_and_runs_json_give_it(tmp_path):
    records = tmp_path / "gpu_floor"
    shutil.copytree(report.RECORDS, records)
    meta = json.loads((records / "runs.json").read_text(encoding="utf-8"))
    assert report.env_commit(records / "run1") == "e5346fe"
    text = report.render(records)
    assert f"| run1 | {meta['run1']['commit']} | e5346fe |" in text and "differs from runs.json's commit" in text
    (records / "run2" / "env.txt").write_text("no commit line\n", encoding="utf-8")
    assert f"| run2 | {meta['run2']['commit']} | none |" in report.render(records)
    for name in meta:  # every env.txt agreeing with runs.json: no note
        (records / name / "env.txt").write_text(f"commit {meta[name]['commit']}000 subject\n", encoding="utf-8")
    assert "differs from runs.json's commit" not in report.render(records)
