"""SNLI 1.0 (an extra): natural language inference, cast exactly as MultiNLI (see `_nli`).

Source: ``snli_1.0.zip`` (Stanford), extracting to ``snli_1.0/snli_1.0_{train,dev,test}.jsonl``.
The paper evaluates an MQAN trained on decaNLP on SNLI zero-shot and after fine-tuning (Section 4.3).
Records labelled ``-`` are excluded by default (``no_gold_label`` drops), as for MultiNLI.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

from deca.registry import Dropped, Example, Source, Task, register
from deca.tasks._nli import NLIOptions, read_nli

URL = "https://nlp.stanford.edu/projects/snli/snli_1.0.zip"
FILES = {"train": "train", "validation": "dev", "test": "test"}


def read(split: str, files: Sequence[Path], options: NLIOptions) -> Iterator[Example | Dropped]:
    """Examples of the split's SNLI file."""
    yield from read_nli(files, options, corpus="SNLI")


register(Task(
    name="snli",
    description="Stanford Natural Language Inference (natural language inference, extra)",
    metric="em",
    sources=(Source(path="snli/snli_1.0.zip", url=URL, extract_to="snli",
                    members=tuple(f"snli/snli_1.0/snli_1.0_{f}.jsonl" for f in FILES.values())),),
    splits={split: (f"snli/snli_1.0/snli_1.0_{f}.jsonl",) for split, f in FILES.items()},
    read=read,
    options=NLIOptions,
    group="nli",
))
