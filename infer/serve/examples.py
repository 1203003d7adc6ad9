"""Example inputs of the registered tasks, for `GET /tasks` and the demo page.

Written by hand (short, in the style of each corpus), with the questions built by the task modules' own
templates (e.g. ``deca.tasks.sst.QUESTION``, ``deca.tasks._nli.nli_question``), so that an example asks
exactly what the model was trained to answer. Variants share their family's example: the MRQA and
MultiNLI genre tasks, and the renamed-label sentiment tasks (``<task>.happy_angry``), whose question and
expected answer get the renamed words. `expected` is what a well-trained model should answer.
"""
from __future__ import annotations

import fnmatch
from dataclasses import asdict, dataclass, replace

from deca.registry import Task, all_tasks
from deca.tasks import cnn_dailymail, iwslt, sst, woz, wikisql
from deca.tasks._nli import nli_context, nli_question
from deca.tasks._renamed import RENAMINGS, rename


@dataclass(frozen=True)
class TaskExample:
    """One example input of a task, with the answer a good model gives."""

    context: str
    question: str
    expected: str


def _review(text: str, label: str) -> TaskExample:
    return TaskExample(text, sst.QUESTION, label)


def _nli(premise: str, hypothesis: str, label: str) -> TaskExample:
    return TaskExample(nli_context(premise), nli_question(hypothesis), label)


_NLI = _nli("The museum stays open until nine on Fridays, so we went after dinner.",
            "The museum closes early on Fridays.", "contradiction")

EXAMPLES: dict[str, TaskExample] = {
    "squad": TaskExample(
        "The Amazon rainforest covers most of the Amazon basin of South America. The basin spans about seven "
        "million square kilometres, of which five and a half million are covered by the rainforest. The "
        "region includes territory belonging to nine nations, and the majority of the forest lies in Brazil.",
        "In which country is the majority of the Amazon rainforest?", "Brazil"),
    "iwslt.en.de": TaskExample("I want to tell you a story about a small village in the mountains.",
                               iwslt.QUESTION, "Ich möchte Ihnen eine Geschichte über ein kleines Dorf in den "
                                               "Bergen erzählen."),
    "cnn_dailymail": TaskExample(
        "(CNN) A team of volunteers cleared more than two tonnes of plastic from a beach in Cornwall on "
        "Saturday. The clean-up, organised by a local surf club, drew over three hundred people. Organisers "
        "said most of the waste had been washed ashore by winter storms and called for stricter rules on "
        "fishing nets, which made up a third of what was collected.",
        cnn_dailymail.QUESTION, "Volunteers cleared two tonnes of plastic from a Cornwall beach. Fishing nets "
                                "made up a third of the waste."),
    "multinli.in.out": _NLI,
    "sst": _review("A gripping, beautifully acted story that stays with you long after the credits roll.",
                   "positive"),
    "srl": TaskExample("The city council approved the new budget on Tuesday after a long debate.",
                       "what did someone approve?", "the new budget"),
    "zre": TaskExample("Ada Lovelace was born in London in 1815 and is remembered for her notes on the "
                       "Analytical Engine.", "Where was Ada Lovelace born?", "London"),
    "woz.en": TaskExample("I am looking for a cheap restaurant in the north part of town.", woz.QUESTION,
                          "price range: cheap, area: north;"),
    "woz.de": TaskExample("Ich suche ein günstiges Restaurant im Norden der Stadt.", woz.QUESTION,
                          "preisklasse: günstig, gegend: norden;"),
    "wikisql": TaskExample(wikisql.table_context(["Player", "Team", "Position", "Goals"],
                                                 "How many goals did the player from Ajax score?"),
                           wikisql.QUESTION, "SELECT Goals FROM table WHERE Team = Ajax"),
    "schema": TaskExample("The trophy did not fit into the suitcase because the trophy was too big.",
                          "What was too big? The trophy or the suitcase?", "The trophy"),
    "snli": _nli("Two children are building a sandcastle on a sunny beach.", "Kids are playing outside.",
                 "entailment"),
    "amazon": _review("The battery barely lasts half a day and the charger stopped working.", "negative"),
    "yelp": _review("The pasta was fresh and the staff made us feel at home.", "positive"),
    "imdb_uci": _review("The plot is thin and the acting is wooden from start to finish.", "negative"),
}

# Families whose tasks share one example (first match wins).
FAMILIES: tuple[tuple[str, TaskExample], ...] = (
    ("mrqa.*", TaskExample(
        "Photosynthesis is the process by which green plants turn light energy into chemical energy. The "
        "energy is stored in sugars made from carbon dioxide and water, and oxygen is released as a by-product.",
        "What gas do plants release during photosynthesis?", "oxygen")),
    ("multinli.*", _NLI),
)


def example_for(name: str) -> TaskExample | None:
    """The example of the task called `name`, or None where there is none."""
    if name in EXAMPLES:
        return EXAMPLES[name]
    base, _, suffix = name.rpartition(".")
    if suffix in RENAMINGS and base in EXAMPLES:
        words = RENAMINGS[suffix]
        ex = EXAMPLES[base]
        return replace(ex, question=rename(ex.question, words), expected=words.get(ex.expected, ex.expected))
    return next((ex for pattern, ex in FAMILIES if fnmatch.fnmatch(name, pattern)), None)


def task_examples(tasks: dict[str, Task] | None = None) -> list[dict]:
    """`GET /tasks`: every registered task that has an example, in registry order (decaNLP first)."""
    out = []
    for name, task in (tasks if tasks is not None else all_tasks()).items():
        ex = example_for(name)
        if ex is not None:
            out.append({"task": name, "description": task.description, "group": task.group, **asdict(ex)})
    return out
