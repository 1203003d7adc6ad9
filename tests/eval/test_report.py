"""The markdown report and the headline bar chart."""
from __future__ import annotations

from eval.report import markdown, write_report


def _result(task, name, value, n=10, extra=None):
    return {"task": task, "split": "validation", "n": n, "metrics": {name: value, **(extra or {})},
            "headline": {"name": name, "value": value}}


def test_single_task_report(tmp_path):
    scored = _result("sst", "em", 86.5, extra={"nem": 87.0, "nf1": 87.0})
    text = markdown(scored)
    assert "| sst | em | 86.50 | 10 |" in text and "decaScore" not in text
    assert "| nf1 | 87.0000 | ↑ |" in text
    paths = write_report(scored, tmp_path / "r")
    assert paths["chart"].read_bytes()[:4] == b"\x89PNG" and paths["markdown"].exists()


def test_dir_report_orders_tasks_as_the_paper_and_flags_partial(tmp_path):
    results = {"woz.en": _result("woz.en", "joint_goal_em", 84.8), "squad": _result("squad", "nf1", 77.0),
               "snli": _result("snli", "em", 60.0)}
    scored = {"split": "validation", "decascore": 161.8, "tasks": ["squad", "woz.en"], "partial": True,
              "missing": ["iwslt.en.de"], "max": 1000.0, "results": results}
    text = markdown(scored)
    assert text.index("| squad |") < text.index("| woz.en |") < text.index("| snli |")
    assert "**decaScore: 161.80** of 1000 (partial: iwslt.en.de missing)" in text
    write_report(scored, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["headline.png", "report.md"]  # no temp files left
