"""CNN / Daily Mail (non-anonymized): summarization cast as question answering.

Sources: the story archives of DeepMind's Q&A data (``cnn_stories.tgz``, ``dailymail_stories.tgz``,
extracting to ``cnn/stories/`` and ``dailymail/stories/``) and abisee's url lists
(``all_{train,val,test}.txt``: the CNN list followed by the Daily Mail list, the order decaNLP
concatenates them in). The story of a url is ``<sha1(url)>.story``.
- context: the article lines (stripped, blank lines skipped) joined by spaces, NFKC-normalized;
- question: ``What is the summary?``;
- answer: the lines after each ``@highlight`` marker joined by spaces, NFKC-normalized.
Every line, article or highlight, gets a final ``.`` unless it already ends like a sentence (abisee's
``fix_missing_period``, which decaNLP copies). A listed story that is not there is a counted drop
(``story_missing``; decaNLP skipped it with a print). Contexts are truncated to
``max_context_tokens`` revtok tokens (400 in decaNLP) by the row hook: a truncation, not a drop.
Paper Table 1: 287,227 / 13,368 / 11,490.
"""
from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from deca.errors import ConfigError, DataError
from deca.registry import Dropped, Example, Source, Task, register
from deca.tasks._lines import iter_lines
from deca.text import detokenize

QUESTION = "What is the summary?"
HIGHLIGHT = "@highlight"
# Acceptable sentence endings (abisee/cnn-dailymail make_datafiles.py), incl. the curly closing quotes.
END_TOKENS = (".", "!", "?", "...", "'", "`", '"', "\u2019", "\u201d", ")")
LIST_URL = "https://raw.githubusercontent.com/abisee/cnn-dailymail/master/url_lists/{}"
DRIVE_URL = "https://drive.google.com/uc?export=download&id={}"
ARCHIVES = {"cnn": "0BwmD_VLjROrfTHk4NFg2SndKcjQ", "dailymail": "0BwmD_VLjROrfM1BxdkxVaTY2bWs"}
LISTS = {"train": "all_train.txt", "validation": "all_val.txt", "test": "all_test.txt"}
LIST_SHA256 = {
    "all_val.txt": "81887e982b045083409c6ee838aede8ff4b97291605bcfb21bffc456a16991db",
    "all_test.txt": "c4f5efb5ec2126430a5c156efbd13d0e9c4cb490169e552c38b4a51981a009bd",
}
STORY_DIRS = tuple(f"cnn_dailymail/{name}/stories" for name in ARCHIVES)
NOTE = ("Google Drive often refuses large downloads ('quota exceeded'). Download {name}_stories.tgz by hand "
        "from https://cs.nyu.edu/~kcho/DMQA/ (the 'Stories' link for {title}) or from the Drive link in a "
        "browser, and put it at <raw>/cnn_dailymail/{name}_stories.tgz (or extract it so that "
        "<raw>/cnn_dailymail/{name}/stories/*.story exist).")


@dataclass(frozen=True)
class CnnDailymailOptions:
    """max_context_tokens: contexts are cut to this many revtok tokens (None: keep whole articles)."""

    max_context_tokens: int | None = 400


def fix_missing_period(line: str) -> str:
    """Add a final '.' to a non-marker line that does not end like a sentence."""
    if HIGHLIGHT in line or not line or line.endswith(END_TOKENS):
        return line
    return line + "."


def parse_story(path: Path) -> tuple[str, str]:
    """(article, summary) of one .story file, both NFKC-normalized."""
    article, highlights = [], []
    in_highlights = False
    for lineno, line in iter_lines(path):
        line = fix_missing_period(line.strip())
        if not line:
            continue
        if line.startswith(HIGHLIGHT):
            in_highlights = True
        elif HIGHLIGHT in line:
            raise DataError(path, f"'{HIGHLIGHT}' in the middle of a line", line=lineno,
                            fix="the story file is damaged; extract the story archive again")
        elif in_highlights:
            highlights.append(line)
        else:
            article.append(line)
    return unicodedata.normalize("NFKC", " ".join(article)), unicodedata.normalize("NFKC", " ".join(highlights))


def story_name(url: str) -> str:
    """The story file name of a url: the sha1 hex digest of the stripped url, plus '.story'."""
    return hashlib.sha1(url.strip().encode("utf-8")).hexdigest() + ".story"


def read(split: str, files: Sequence[Path], options) -> Iterator[Example | Dropped]:
    """One example per url of the split's list, in list order; missing stories are counted drops."""
    url_list, *story_dirs = (Path(f) for f in files)
    for directory in story_dirs:
        if not directory.is_dir():
            name = directory.parent.name
            raise DataError(directory, "story directory not found",
                            fix=f"download and extract {name}_stories.tgz (`deca download --tasks cnn_dailymail`)")
    for lineno, url in iter_lines(url_list):
        url = url.strip()
        if not url:
            continue
        name = story_name(url)
        story = next((d / name for d in story_dirs if (d / name).is_file()), None)
        if story is None:
            yield Dropped(id=name[:-6], reason="story_missing", detail=f"{url_list.name}:{lineno} {url}")
            continue
        article, summary = parse_story(story)
        yield Example(id=name[:-6], context=article, question=QUESTION, answer=summary)


def truncate_context(row: dict, split: str, options: CnnDailymailOptions) -> dict:
    """Cut the context to `options.max_context_tokens` tokens (the text is rebuilt from the tokens)."""
    limit = options.max_context_tokens
    if limit is None:
        return row
    if limit < 1:
        raise ConfigError("prepare.task_options.cnn_dailymail.max_context_tokens: must be at least 1 or null, "
                          f"got {limit}")
    if len(row["context_tokens"]) > limit:
        row["context_tokens"] = row["context_tokens"][:limit]
        row["context"] = detokenize(row["context_tokens"])
    return row


register(Task(
    name="cnn_dailymail",
    description="CNN / Daily Mail news stories (summarization)",
    metric="rouge",
    sources=tuple(
        Source(path=f"cnn_dailymail/{name}_stories.tgz", url=DRIVE_URL.format(drive_id), extract_to="cnn_dailymail",
               members=(f"cnn_dailymail/{name}/stories",),
               note=NOTE.format(name=name, title="CNN" if name == "cnn" else "Daily Mail"))
        for name, drive_id in ARCHIVES.items()
    ) + tuple(
        Source(path=f"cnn_dailymail/url_lists/{f}", url=LIST_URL.format(f), sha256=LIST_SHA256.get(f))
        for f in LISTS.values()
    ),
    splits={split: (f"cnn_dailymail/url_lists/{f}",) + STORY_DIRS for split, f in LISTS.items()},
    read=read,
    options=CnnDailymailOptions,
    row_hook=truncate_context,
    paper_counts={"train": 287227, "validation": 13368, "test": 11490},
))
