"""SQuAD v1.1: extractive question answering.

Source: the official ``{train,dev}-v1.1.json`` (``{"data": [{"title", "paragraphs": [{"context",
"qas": [{"id", "question", "answers": [{"text", "answer_start"}]}]}]}]}``). Cast as decaNLP does
(reference §1): context = the paragraph, question = the question with whitespace normalized,
answer = the first gold answer's text, answers = every gold answer's text (for nF1). Ids are the
SQuAD question ids; an example's group is its article's title (a custom task can split articles:
deca/custom_tasks.py). No test split (the official test set is hidden).

The paper excludes SQuAD training examples whose context is longer than 400 tokens: the option
``max_train_context_tokens`` (default 400, ``null`` keeps all) drops them from the training split
after tokenization, as ``Dropped(reason="context_too_long")``. Paper Table 1: 87,599 / 10,570.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from deca.errors import DataError
from deca.registry import Dropped, Example, Source, Task, register
from deca.tasks._lines import load_json

URL = "https://rajpurkar.github.io/SQuAD-explorer/dataset/{}-v1.1.json"
SHA256 = {
    "train": None,  # not known here: the train file could not be fetched to compute it
    "dev": "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9",
}
FILES = {"train": "train", "validation": "dev"}


@dataclass(frozen=True)
class SquadOptions:
    """Filters of the paper, as parameters (prepare.task_options.squad)."""

    max_train_context_tokens: int | None = 400  # drop training examples with longer contexts; None keeps all


def _malformed(path: Path, where: str, what: str) -> DataError:
    return DataError(path, f"malformed SQuAD record at {where}: {what}",
                     fix="check the file is the official SQuAD v1.1 JSON (train-v1.1.json / dev-v1.1.json)")


def read(split: str, files: Sequence[Path], options) -> Iterator[Example]:
    """One example per question, in file order."""
    (path,) = files
    path = Path(path)
    squad = load_json(path)
    if not isinstance(squad, dict) or not isinstance(squad.get("data"), list):
        raise _malformed(path, "top level", "expected an object with a 'data' list")
    for a, article in enumerate(squad["data"]):
        for p, paragraph in enumerate(article.get("paragraphs", ())):
            try:
                context, qas = paragraph["context"], paragraph["qas"]
            except (KeyError, TypeError):
                raise _malformed(path, f"data[{a}].paragraphs[{p}]", "expected 'context' and 'qas'") from None
            for q, qa in enumerate(qas):
                try:
                    texts = [answer["text"] for answer in qa["answers"]]
                    qid, question = qa["id"], qa["question"]
                except (KeyError, TypeError):
                    raise _malformed(path, f"data[{a}].paragraphs[{p}].qas[{q}]",
                                     "expected 'id', 'question' and 'answers' with 'text'") from None
                if not texts:
                    raise _malformed(path, f"data[{a}].paragraphs[{p}].qas[{q}] (id {qid})", "no gold answer")
                yield Example(id=qid, context=context, question=" ".join(question.split()), answer=texts[0],
                              answers=texts, group=str(article.get("title", a)))


def row_hook(row: dict, split: str, options: SquadOptions) -> dict | Dropped:
    """Drop training examples whose context has more than `max_train_context_tokens` tokens."""
    limit = options.max_train_context_tokens
    if split == "train" and limit is not None and len(row["context_tokens"]) > limit:
        return Dropped(id=row["id"], reason="context_too_long",
                       detail=f"{len(row['context_tokens'])} context tokens > {limit}")
    return row


register(Task(
    name="squad",
    description="Stanford Question Answering Dataset v1.1 (question answering)",
    metric="nf1",
    sources=tuple(Source(path=f"squad/{f}-v1.1.json", url=URL.format(f), sha256=SHA256[f]) for f in SHA256),
    splits={split: (f"squad/{f}-v1.1.json",) for split, f in FILES.items()},
    read=read,
    options=SquadOptions,
    row_hook=row_hook,
    paper_counts={"train": 87599, "validation": 10570},
))
