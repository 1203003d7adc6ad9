"""Synthetic corpora in the official raw formats, at the real sizes of the paper's Table 1 (or a fraction).

    .venv/bin/python -m bench.synth_corpora --out /tmp/deca-corpora [--fraction 1.0] [--seed 0]
    .venv/bin/deca prepare --tasks squad cnn_dailymail multinli.in.out zre --mirror /tmp/deca-corpora

Writes a mirror laid out like ../shared/corpora (what `deca prepare --mirror` and `deca download
--mirror` read) for the four largest corpora the real mirror lacks at full size:

- SQuAD v1.1: ``squad/{train,dev}-v1.1.json`` (articles -> paragraphs -> qas; dev questions have several
  gold answers, train one; every answer is a span of its context with its ``answer_start``);
- CNN/Daily Mail: ``cnn_dailymail/{cnn,dailymail}/stories/<sha1(url)>.story`` (article lines, then
  ``@highlight`` blocks) and ``cnn_dailymail/url_lists/all_{train,val,test}.txt`` (CNN urls, then Daily
  Mail urls, in the real lists' proportions);
- MultiNLI 1.0: ``multinli/multinli_1.0/multinli_1.0_{train,dev_matched,dev_mismatched}.jsonl`` with every
  field of the release (parses included: they are most of the bytes); about 1.8% of dev labels are ``-``;
- QA-ZRE: ``zre/relation_splits/{train,dev,test}.0``, tab-separated (relation, template, subject,
  sentence, answers...).

Lengths follow the real files in ../shared/corpora: each synthetic record copies the word counts of a
real record drawn at random (SQuAD dev paragraphs with their questions and answers, the 20 real CNN
stories line by line, the 20 real NLI pairs (5 MultiNLI GLUE rows, 15 SNLI lines), the 16,800 real
QA-ZRE lines with their relation and question template). Words are drawn from each corpus's real
vocabulary with its real frequencies. Everything comes from one seeded generator: the same
arguments give the same bytes.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
REAL = Path(os.environ.get("DECA_SHARED_CORPORA", ROOT.parent / "shared" / "corpora"))  # the real files
# Table 1 of the paper (train, validation, test); MultiNLI validation = matched + mismatched dev records.
SIZES = {
    "squad": {"train": 87599, "validation": 10570},
    "cnn_dailymail": {"train": 287227, "validation": 13368, "test": 11490},
    "multinli": {"train": 392702, "validation": 20000},
    "zre": {"train": 840000, "validation": 600, "test": 12000},
}
CNN_SHARE = {"train": 90266 / 287227, "validation": 1220 / 13368, "test": 1093 / 11490}  # the real url lists
TRAIN_GENRES = ("fiction", "government", "slate", "telephone", "travel")
MISMATCHED_GENRES = ("facetoface", "letters", "nineeleven", "oup", "verbatim")
LABELS = ("entailment", "neutral", "contradiction")
UNLABELLED_SHARE = 0.018


class Words:
    """Words drawn from a real vocabulary with its real frequencies."""

    def __init__(self, counts: Counter, rng: np.random.Generator):
        self.vocab = np.array(list(counts), dtype=object)
        self.cdf = np.cumsum(np.array(list(counts.values()), dtype=np.float64))
        self.cdf /= self.cdf[-1]
        self.rng = rng

    def text(self, n: int) -> str:
        return " ".join(self.list(n))

    def list(self, n: int) -> list[str]:
        if n <= 0:
            return []
        picks = np.searchsorted(self.cdf, self.rng.random(n), side="right")  # rng.choice(p=) redoes the cdf per call
        return self.vocab[np.minimum(picks, len(self.vocab) - 1)].tolist()


def count(n_full: int, fraction: float) -> int:
    return max(1, round(n_full * fraction))


# -------------------------------------------------------------------------------------------- SQuAD

def squad_profiles() -> list[dict]:
    """Per real dev paragraph: context words, and (question words, [answer words per gold answer]) per question."""
    real = json.loads((REAL / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))
    return [{"context": len(p["context"].split()),
             "qas": [(len(q["question"].split()), [max(1, len(a["text"].split())) for a in q["answers"]])
                     for q in p["qas"]]}
            for a in real["data"] for p in a["paragraphs"]]


def squad_words(rng: np.random.Generator) -> tuple[Words, Words]:
    real = json.loads((REAL / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))
    paragraphs = [p for a in real["data"] for p in a["paragraphs"]]
    context = Counter(w for p in paragraphs for w in p["context"].split())
    question = Counter(w for p in paragraphs for q in p["qas"] for w in q["question"].rstrip("?").split())
    return Words(context, rng), Words(question, rng)


def squad_paragraph(profile: dict, words: Words, qwords: Words, rng, split: str, next_id: Callable[[], str]) -> dict:
    tokens = words.list(profile["context"])
    starts = np.cumsum([0] + [len(t) + 1 for t in tokens])
    qas = []
    for q_len, answer_lens in profile["qas"]:
        answers = []
        for a_len in answer_lens if split == "validation" else answer_lens[:1]:
            a_len = min(a_len, len(tokens))
            first = int(rng.integers(0, len(tokens) - a_len + 1))
            answers.append({"answer_start": int(starts[first]), "text": " ".join(tokens[first:first + a_len])})
        qas.append({"answers": answers, "question": qwords.text(max(1, q_len - 1)) + "?", "id": next_id()})
    return {"context": " ".join(tokens), "qas": qas}


def write_squad(out: Path, fraction: float, rng: np.random.Generator) -> dict[str, int]:
    profiles = squad_profiles()
    words, qwords = squad_words(rng)
    written, serial = {}, iter(range(1, 1 << 62))

    def next_id() -> str:
        return f"{next(serial):024x}"

    for split, name in (("train", "train"), ("validation", "dev")):
        target, questions, article = count(SIZES["squad"][split], fraction), 0, 0
        path = out / "squad" / f"{name}-v1.1.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write('{"data": [')
            while questions < target:
                paragraphs = []
                for _ in range(int(rng.integers(21, 99))):  # paragraphs per article, as the real dev set
                    profile = dict(profiles[int(rng.integers(len(profiles)))])
                    profile["qas"] = profile["qas"][:target - questions]
                    paragraphs.append(squad_paragraph(profile, words, qwords, rng, split, next_id))
                    questions += len(profile["qas"])
                    if questions >= target:
                        break
                record = {"title": f"Synthetic_{article}", "paragraphs": paragraphs}
                f.write((", " if article else "") + json.dumps(record))
                article += 1
            f.write('], "version": "1.1"}')
        written[split] = questions
    return written


# ----------------------------------------------------------------------------------------- CNN / DM

def cnn_profiles() -> tuple[list[dict], Counter]:
    """Per real story: words per article line and per highlight; and the stories' word counts."""
    profiles, counts = [], Counter()
    for path in sorted((REAL / "cnn_dailymail" / "cnn" / "stories").glob("*.story")):
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        cut = lines.index("@highlight") if "@highlight" in lines else len(lines)
        article, highlights = lines[:cut], [h for h in lines[cut:] if h != "@highlight"]
        profiles.append({"article": [len(line.split()) for line in article],
                         "highlights": [len(h.split()) for h in highlights]})
        counts.update(w for line in article + highlights for w in line.split())
    return profiles, counts


def story_text(profile: dict, words: Words) -> str:
    article = "\n\n".join(words.text(n) for n in profile["article"])
    highlights = "".join(f"\n\n@highlight\n\n{words.text(n)}" for n in profile["highlights"])
    return article + highlights + "\n"


def story_url(source: str, split: str, n: int) -> str:
    if source == "cnn":
        return f"http://web.archive.org/web/2015{n:010d}id_/http://www.cnn.com/synthetic/{split}/{n}/index.html"
    return (f"http://web.archive.org/web/2015{n:010d}id_/http://www.dailymail.co.uk/news/article-{n}/"
            f"synthetic-{split}.html")


def write_cnn_dailymail(out: Path, fraction: float, rng: np.random.Generator) -> dict[str, int]:
    profiles, counts = cnn_profiles()
    words = Words(counts, rng)
    base = out / "cnn_dailymail"
    for source in ("cnn", "dailymail"):
        (base / source / "stories").mkdir(parents=True, exist_ok=True)
    (base / "url_lists").mkdir(parents=True, exist_ok=True)
    written = {}
    for split, list_name in (("train", "all_train.txt"), ("validation", "all_val.txt"), ("test", "all_test.txt")):
        total = count(SIZES["cnn_dailymail"][split], fraction)
        n_cnn = round(total * CNN_SHARE[split])
        urls = []
        for i in range(total):
            source = "cnn" if i < n_cnn else "dailymail"
            url = story_url(source, split, i)
            name = hashlib.sha1(url.encode("utf-8")).hexdigest() + ".story"
            profile = profiles[int(rng.integers(len(profiles)))]
            (base / source / "stories" / name).write_text(story_text(profile, words), encoding="utf-8")
            urls.append(url)
        (base / "url_lists" / list_name).write_text("\n".join(urls) + "\n", encoding="utf-8")
        written[split] = total
    return written


# ------------------------------------------------------------------------------------------ MultiNLI

def nli_pairs() -> tuple[list[tuple[int, int]], Counter]:
    """(premise words, hypothesis words) of the real NLI records here, and their words."""
    pairs, counts = [], Counter()

    def add(premise: str, hypothesis: str) -> None:
        pairs.append((len(premise.split()), len(hypothesis.split())))
        counts.update(premise.split() + hypothesis.split())

    for path in sorted((REAL / "multinli" / "samples_glue_mtdnn").glob("*.tsv")):
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                add(row["sentence1"], row["sentence2"])
    for path in sorted((REAL / "snli" / "samples").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                add(record["sentence1"], record["sentence2"])
    return pairs, counts


def binary_parse(tokens: list[str]) -> str:
    """A right-branching binary bracketing, as the release's *_binary_parse fields look."""
    text = tokens[-1]
    for token in reversed(tokens[:-1]):
        text = f"( {token} {text} )"
    return text


def constituency_parse(tokens: list[str]) -> str:
    return "(ROOT (S " + " ".join(f"(NN {t})" for t in tokens) + "))"


def nli_record(n: int, pair: tuple[int, int], words: Words, genre: str, label: str) -> str:
    premise, hypothesis = words.list(max(1, pair[0])), words.list(max(1, pair[1]))
    return json.dumps({
        "annotator_labels": [label], "genre": genre, "gold_label": label, "pairID": f"{n}{label[0]}",
        "promptID": str(n), "sentence1": " ".join(premise), "sentence1_binary_parse": binary_parse(premise),
        "sentence1_parse": constituency_parse(premise), "sentence2": " ".join(hypothesis),
        "sentence2_binary_parse": binary_parse(hypothesis), "sentence2_parse": constituency_parse(hypothesis),
    })


def write_multinli(out: Path, fraction: float, rng: np.random.Generator) -> dict[str, int]:
    pairs, counts = nli_pairs()
    words = Words(counts, rng)
    base = out / "multinli" / "multinli_1.0"
    base.mkdir(parents=True, exist_ok=True)
    dev = count(SIZES["multinli"]["validation"], fraction)
    files = (("train", count(SIZES["multinli"]["train"], fraction), TRAIN_GENRES),
             ("dev_matched", (dev + 1) // 2, TRAIN_GENRES), ("dev_mismatched", dev // 2, MISMATCHED_GENRES))
    serial = 0
    for name, n, genres in files:
        with open(base / f"multinli_1.0_{name}.jsonl", "w", encoding="utf-8") as f:
            for _ in range(n):
                serial += 1
                label = str(rng.choice(LABELS))
                if name != "train" and rng.random() < UNLABELLED_SHARE:
                    label = "-"
                genre = genres[int(rng.integers(len(genres)))]
                f.write(nli_record(serial, pairs[int(rng.integers(len(pairs)))], words, genre, label) + "\n")
    return {"train": files[0][1], "validation": dev}


# ---------------------------------------------------------------------------------------------- QA-ZRE

def zre_lines() -> list[list[str]]:
    path = REAL / "zre" / "relation_splits" / "train.very_small.0"
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def zre_line(real: list[str], words: Words) -> str:
    """A line with the real line's relation and template, and random words in its subject, sentence and
    answers (same word counts)."""
    relation, template, subject, sentence, *answers = real
    fields = [relation, template, words.text(len(subject.split()) or 1), words.text(len(sentence.split()) or 1)]
    return "\t".join(fields + [words.text(len(a.split()) or 1) for a in answers])


def write_zre(out: Path, fraction: float, rng: np.random.Generator) -> dict[str, int]:
    real = zre_lines()
    words = Words(Counter(w for line in real for col in (line[2:]) for w in col.split()), rng)
    base = out / "zre" / "relation_splits"
    base.mkdir(parents=True, exist_ok=True)
    written = {}
    for split, name in (("train", "train.0"), ("validation", "dev.0"), ("test", "test.0")):
        n = count(SIZES["zre"][split], fraction)
        with open(base / name, "w", encoding="utf-8") as f:
            for _ in range(n):
                f.write(zre_line(real[int(rng.integers(len(real)))], words) + "\n")
        written[split] = n
    return written


WRITERS = {"squad": write_squad, "cnn_dailymail": write_cnn_dailymail, "multinli": write_multinli, "zre": write_zre}
TASKS = {"squad": "squad", "cnn_dailymail": "cnn_dailymail", "multinli": "multinli.in.out", "zre": "zre"}


def write_all(out: Path, fraction: float = 1.0, seed: int = 0, corpora: list[str] | None = None) -> dict:
    """Write the synthetic mirror under `out`; returns {corpus: {split: examples}} (examples before any drop)."""
    if not REAL.is_dir():
        raise SystemExit(f"error: the real corpora ({REAL}) are needed for the length distributions")
    if not 0 < fraction <= 1:
        raise SystemExit(f"error: --fraction must be in (0, 1], got {fraction}")
    result = {}
    for i, name in enumerate(corpora or list(WRITERS)):
        rng = np.random.default_rng([seed, i])
        result[name] = WRITERS[name](out, fraction, rng)
    return result


def iter_sizes(fraction: float) -> Iterator[tuple[str, str, int]]:
    for corpus, splits in SIZES.items():
        for split, n in splits.items():
            yield corpus, split, count(n, fraction)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the mirror to write (outside the repository)")
    parser.add_argument("--fraction", type=float, default=1.0, help="of the Table 1 sizes (default 1.0: full size)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpora", default=",".join(WRITERS), help="comma-separated subset of " + ", ".join(WRITERS))
    args = parser.parse_args()
    if args.out.resolve().is_relative_to(ROOT):
        parser.error(f"--out {args.out} is inside the repository; write synthetic corpora under /tmp")
    corpora = [c for c in args.corpora.split(",") if c]
    unknown = sorted(set(corpora) - set(WRITERS))
    if unknown:
        parser.error(f"unknown corpora {', '.join(unknown)} (known: {', '.join(WRITERS)})")
    written = write_all(args.out, args.fraction, args.seed, corpora)
    print(json.dumps(written, indent=1))
    tasks = " ".join(TASKS[c] for c in corpora)
    print(f"prepare with: deca prepare --tasks {tasks} --mirror {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
