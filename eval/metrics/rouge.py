"""ROUGE-1, ROUGE-2, ROUGE-L (CNN/DailyMail) with rouge-score, per example, in parallel for large sets.

Project decision (see ../shared/spec/decanlp-reference.md, "This project's decisions"): decaNLP ran the
ROUGE-1.5.5 Perl script through pyrouge (options ``-a -c 95 -m -n 2 -w 1.3``, sentences split on ".",
one call per example, a multiprocessing pool of cpu_count()//2). We use Google's rouge-score with the
Porter stemmer instead: the same per-example F-measures of ROUGE-1, ROUGE-2 and ROUGE-L, macro-averaged
and ×100, and ``rouge = (rouge1 + rouge2 + rougeL) / 3`` as the headline (decaNLP's ``avg_rouge``).
Differences to expect: rouge-score's tokenizer keeps only ``[a-z0-9]`` runs (non-ASCII letters split
words; fine for English summaries), its ROUGE-L is the plain sentence-level LCS over the whole text (the
Perl script unions LCS over "."-split sentences), and ``-w 1.3`` only affected ROUGE-W, which decaNLP
did not report. With several golds the best-scoring gold is used per ROUGE type (``score_multi``).

Stemming dominates the cost, so stems are memoized (`CachedStemTokenizer`; same output as rouge-score's
default tokenizer with ``use_stemmer=True``, which a test checks), and large sets are split into
contiguous chunks scored by a pool of processes; per-example scores come back in input order, so the
averages are identical whatever the number of processes.
"""
from __future__ import annotations

import multiprocessing
import os
from typing import Sequence

from nltk.stem import porter
from rouge_score import rouge_scorer, tokenize, tokenizers
from tqdm import tqdm

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
PARALLEL_THRESHOLD = 2000  # below this many examples a pool costs more than it saves
CHUNK = 500  # examples per task sent to a worker (progress granularity)


class _MemoStemmer:
    """A Porter stemmer whose results are cached (stemming is a pure function of the word)."""

    def __init__(self) -> None:
        self._stemmer = porter.PorterStemmer()
        self._cache: dict[str, str] = {}

    def stem(self, word: str) -> str:
        stem = self._cache.get(word)
        if stem is None:
            stem = self._cache[word] = self._stemmer.stem(word)
        return stem


class CachedStemTokenizer(tokenizers.Tokenizer):
    """rouge-score's DefaultTokenizer(use_stemmer=True), with memoized stems."""

    def __init__(self) -> None:
        self._stemmer = _MemoStemmer()

    def tokenize(self, text: str) -> list[str]:
        return tokenize.tokenize(text, self._stemmer)


def make_scorer() -> rouge_scorer.RougeScorer:
    """The scorer used for every example: ROUGE-1/2/L with Porter stemming."""
    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), tokenizer=CachedStemTokenizer())


def score_example(scorer: rouge_scorer.RougeScorer, prediction: str, golds: Sequence[str]) -> tuple[float, ...]:
    """(R1 F, R2 F, RL F) of one prediction, in 0..1; the best gold per type when there are several."""
    if len(golds) == 1:
        scores = scorer.score(golds[0], prediction)
    elif golds:
        scores = scorer.score_multi(list(golds), prediction)
    else:
        return (0.0,) * len(ROUGE_TYPES)
    return tuple(scores[t].fmeasure for t in ROUGE_TYPES)


_WORKER_SCORER: rouge_scorer.RougeScorer | None = None


def _init_worker() -> None:
    global _WORKER_SCORER
    _WORKER_SCORER = make_scorer()


def _score_chunk(chunk: list[tuple[str, Sequence[str]]]) -> list[tuple[float, ...]]:
    scorer = _WORKER_SCORER if _WORKER_SCORER is not None else make_scorer()
    return [score_example(scorer, p, g) for p, g in chunk]


def default_processes(n_examples: int) -> int:
    """1 below PARALLEL_THRESHOLD examples, else every available CPU."""
    if n_examples < PARALLEL_THRESHOLD:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus)


def per_example_scores(predictions: Sequence[str], golds: Sequence[Sequence[str]],
                       processes: int | None = None, progress: bool = False) -> list[tuple[float, ...]]:
    """(R1, R2, RL) F-measures of every example, in input order, computed by `processes` processes."""
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions but {len(golds)} gold entries")
    items = list(zip(predictions, golds))
    chunks = [items[i:i + CHUNK] for i in range(0, len(items), CHUNK)]
    processes = default_processes(len(items)) if processes is None else max(1, int(processes))
    processes = min(processes, len(chunks)) or 1
    if multiprocessing.current_process().daemon:
        processes = 1  # a daemonic worker (e.g. inside another Pool) may not start children

    bar = tqdm(total=len(items), desc="rouge", unit="ex", disable=not progress, leave=False)
    out: list[tuple[float, ...]] = []
    try:
        if processes == 1:
            scorer = make_scorer()
            for chunk in chunks:
                out.extend(score_example(scorer, p, g) for p, g in chunk)
                bar.update(len(chunk))
        else:
            # fork: workers start in milliseconds and need nothing from the parent but this module.
            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            with multiprocessing.get_context(method).Pool(processes, initializer=_init_worker) as pool:
                for scores in pool.imap(_score_chunk, chunks):
                    out.extend(scores)
                    bar.update(len(scores))
    finally:
        bar.close()
    return out


def rouge(predictions: Sequence[str], golds: Sequence[Sequence[str]], processes: int | None = None,
          progress: bool = False) -> dict[str, float]:
    """Macro-averaged ROUGE-1/2/L F ×100 and their mean `rouge` (decaNLP's avg_rouge, the headline)."""
    if not predictions:
        raise ValueError("no examples to score")
    scores = per_example_scores(predictions, golds, processes=processes, progress=progress)
    n = len(scores)
    out = {t: 100.0 * sum(s[k] for s in scores) / n for k, t in enumerate(ROUGE_TYPES)}
    out["rouge"] = sum(out[t] for t in ROUGE_TYPES) / len(ROUGE_TYPES)
    return out
