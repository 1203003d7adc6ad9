"""The demo page in a real headless Chromium, against a real uvicorn server (infer/serve/static, browser.py)."""
from __future__ import annotations

import json
import re

import pytest

from tests.browser import Browser, ask_example
from infer.serve.examples import example_for

from .conftest import LIMITS, http

# Figure 1 of the paper: red = copied from the context, green = from the question, blue = from the vocabulary
COLOURS = {"context": "rgb(214, 39, 40)", "question": "rgb(44, 160, 44)", "vocabulary": "rgb(31, 119, 180)"}


@pytest.fixture(scope="module")
def browser(chromium):
    with Browser() as b:
        yield b


def richest_example(url: str) -> str:
    """The task whose example the model answers with the most sources (then the most tokens)."""
    _, tasks, _ = http(f"{url}/tasks")
    fit = [t for t in tasks["tasks"] if len(t["context"]) <= LIMITS.max_context_chars][:LIMITS.max_requests]
    _, answers, _ = http(f"{url}/predict", [{"context": t["context"], "question": t["question"]} for t in fit])
    score = [(len({s["source"] for s in a["tokens"]}), len(a["tokens"])) for a in answers]
    return fit[max(range(len(fit)), key=score.__getitem__)]["task"]


@pytest.mark.slow
@pytest.mark.parametrize("which", ["sst", "richest"])
def test_an_example_is_asked_and_its_tokens_are_coloured_by_source(server, browser, which, checkpoint):
    url, _ = server
    task = richest_example(url) if which == "richest" else which
    shown = ask_example(browser, f"{url}/", task)
    assert shown["error"] is None
    assert re.fullmatch(r"in \d+ ms \(server \d+ ms\)", shown["time"]), shown["time"]
    assert str(checkpoint) in browser.evaluate("document.getElementById('model').textContent")
    ex = example_for(task)
    assert browser.evaluate("document.getElementById('context').value") == ex.context
    _, api, _ = http(f"{url}/predict", {"context": ex.context, "question": ex.question})
    assert shown["answer"] == api["answer"]
    assert [(t["text"], t["source"]) for t in shown["tokens"]] == [(s["token"], s["source"]) for s in api["tokens"]]
    assert shown["tokens"], f"the trained miniature model answers the {task} example with something"
    for token, step in zip(shown["tokens"], api["tokens"]):
        assert token["color"] == COLOURS[step["source"]]
        bar = dict(token["bar"])  # stacked bar: one segment per source, width = its weight
        assert set(bar) == set(COLOURS) and sum(bar.values()) == pytest.approx(100, abs=0.05)
        for source, weight in step["weights"].items():
            assert bar[source] == pytest.approx(100 * weight, abs=0.01)
            assert f"{source} weight {weight:.3f}" in token["title"]
        assert f"probability {step['probability']:.3f}" in token["title"]


@pytest.mark.slow
def test_a_refused_question_shows_the_servers_message(server, browser):
    url, _ = server
    browser.open(f"{url}/")
    too_long = "x" * (LIMITS.max_context_chars + 1)
    browser.evaluate(f"""(() => {{
        document.getElementById('context').value = {json.dumps(too_long)};
        document.getElementById('question').value = 'Is this review negative or positive?';
        document.getElementById('ask').click(); }})()""")
    message = browser.wait_for("!document.getElementById('error').hidden && "
                               "document.getElementById('error').textContent")
    assert f"context: at most {LIMITS.max_context_chars} characters" in message
    assert browser.evaluate("document.querySelectorAll('#answer .token').length") == 0


@pytest.mark.slow
def test_the_screenshot_is_a_png(server, browser, tmp_path):
    url, _ = server
    ask_example(browser, f"{url}/", "sst")
    png = browser.screenshot(tmp_path / "demo.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
