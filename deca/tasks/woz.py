"""WOZ 2.0 dialogue state tracking, cast as question answering (English `woz.en`, German `woz.de`).

Source: the neural-belief-tracker release, one JSON array of dialogues per split and language.
Each user turn is one example:
- context: the system acts of the turn (``slot: value`` or a bare slot) joined by ``", "``, then
  ``" -- "`` when there are any, then the user transcript;
- question: ``What is the change in state?``;
- answer: the change of the dialogue state, as decaNLP writes it: the inform ``[slot, value]`` pairs
  not in the previous turn's belief state as ``"s1: v1, s2: v2;"``, followed by ``" r1, r2"`` when the
  turn requests slots; ``"; r1"`` without informs; ``None`` when nothing changed. Removed slots are
  never represented.
The gold JSON keeps what joint-goal accuracy needs: the dialogue, the turn (0-based, in numeric
order: decaNLP sorted ``_10`` before ``_2``), the cumulative inform state accumulated from the gold
deltas (``state[slot] = value``, as decaNLP's metric does) and this turn's requests.
Paper Table 1 (English): 2,536 / 830 / 1,646 turns.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, Iterator, Sequence

from deca.errors import DataError
from deca.registry import Dropped, Example, Source, Task, register
from deca.tasks._lines import load_json
from deca.text import normalize_space

URL = "https://raw.githubusercontent.com/nmrksic/neural-belief-tracker/master/data/woz/{}"
QUESTION = "What is the change in state?"
FILES = {"train": "train", "validation": "validate", "test": "test"}
SHA256 = {
    "woz_train_en.json": "7cd9e971553e5f3e80bb0c93164bf4c619c7f49f45d636a0512474cdeb074485",
    "woz_validate_en.json": "ae1ea9067fd05c0179d349f140b38de1b2db587d5bfcb4f99ef0d77474ab00ad",
    "woz_test_en.json": "3673e433b21a6b0d74e9144bd059e64b29bc3e1c5dc0e18654a98ec597c0d72c",
    "woz_train_de.json": "5a45bf0aefd258dbd05fd178b0be04ea7bbd4594b245e381f4ffeaabe3fa3c8a",
    "woz_validate_de.json": "d2c0086b86430b61eab7f816c6f34d52e79a403a46e9b45d5867b0fa912cfb48",
    "woz_test_de.json": "e40219302733703ae5beadccd7cc4079befdc720903b9ccf22b4a952c83bdbe6",
}
FIX = "the file should be the official woz_<split>_<lang>.json of nmrksic/neural-belief-tracker; download it again"


def turn_context(turn: dict) -> str:
    """System acts joined by ', ' (a [slot, value] act as 'slot: value'), ' -- ', then the transcript."""
    acts = [": ".join(act) if isinstance(act, list) else act for act in turn["system_acts"]]
    actions = ", ".join(acts)
    if actions:
        actions += " -- "
    return actions + turn["transcript"]


def turn_delta(belief_state: list, previous_informs: list) -> tuple[list, list, list]:
    """(delta informs, all informs of this turn, requests) from a turn's belief state.

    A delta inform is a [slot, value] pair absent from the previous turn's informs; every act other
    than 'inform' contributes its slot name (the pair's second item) as a request, as in decaNLP.
    """
    delta, informs, requests = [], [], []
    for item in belief_state:
        if "slots" not in item:
            continue
        for slot in item["slots"]:
            if item.get("act") == "inform":
                informs.append(slot)
                if slot not in previous_informs:
                    delta.append(slot)
            else:
                requests.append(slot[1])
    return delta, informs, requests


def answer_string(delta: list, requests: list) -> str:
    """decaNLP's change-of-state string: 's1: v1, s2: v2;' + ' r1, r2'; '; r1'; or 'None'."""
    answer = ", ".join(f"{slot}: {value}" for slot, value in delta) + ";"
    if requests:
        answer += " " + ", ".join(requests)
    return answer if len(answer) > 1 else "None"


def _norm(text: str) -> str:
    return normalize_space(text).lower()


def _check_turn(path: Path, di: int, ti: int, turn: Any) -> None:
    where = f"dialogue {di} turn {ti}"
    if not isinstance(turn, dict):
        raise DataError(path, f"{where}: expected an object, got {type(turn).__name__}", fix=FIX)
    for key, kind in (("transcript", str), ("system_acts", list), ("belief_state", list)):
        if not isinstance(turn.get(key), kind):
            raise DataError(path, f"{where}: field {key!r} missing or not a {kind.__name__}", fix=FIX)
    for act in turn["system_acts"]:
        if not (isinstance(act, str) or isinstance(act, list) and all(isinstance(a, str) for a in act)):
            raise DataError(path, f"{where}: malformed system act {act!r}", fix=FIX)
    for item in turn["belief_state"]:
        slots = item.get("slots", []) if isinstance(item, dict) else None
        if not isinstance(slots, list) or not all(
                isinstance(s, list) and len(s) == 2 and all(isinstance(x, str) for x in s) for s in slots):
            raise DataError(path, f"{where}: malformed belief state item {item!r:.100}", fix=FIX)


def read_dialogues(path: Path, lang: str) -> Iterator[Example]:
    """One example per turn of every dialogue in `path`, dialogues and turns in file order."""
    dialogues = load_json(path, fix=FIX)
    if not isinstance(dialogues, list):
        raise DataError(path, f"expected a JSON array of dialogues, got {type(dialogues).__name__}", fix=FIX)
    for di, dialogue in enumerate(dialogues):
        turns = dialogue.get("dialogue") if isinstance(dialogue, dict) else None
        if not isinstance(turns, list):
            raise DataError(path, f"dialogue {di}: no 'dialogue' list of turns", fix=FIX)
        previous_informs: list = []
        state: dict[str, str] = {}
        for ti, turn in enumerate(turns):
            _check_turn(path, di, ti, turn)
            delta, previous_informs, requests = turn_delta(turn["belief_state"], previous_informs)
            for slot, value in delta:
                state[_norm(slot)] = _norm(value)
            gold = {"dialogue_id": f"{lang}_{di}", "turn": ti, "state": dict(state),
                    "requests": [_norm(r) for r in requests]}
            yield Example(id=f"{lang}_{di}_{ti}", context=turn_context(turn), question=QUESTION,
                          answer=answer_string(delta, requests), gold=gold)


def read(lang: str, split: str, files: Sequence[Path], options) -> Iterator[Example | Dropped]:
    """Examples of the `lang` WOZ file of a split (bound to a language with functools.partial)."""
    (path,) = files
    yield from read_dialogues(Path(path), lang)


for _lang, _paper in (("en", {"train": 2536, "validation": 830, "test": 1646}), ("de", {})):
    register(Task(
        name=f"woz.{_lang}",
        description=f"WOZ 2.0 restaurant dialogues, {'English' if _lang == 'en' else 'German'} "
                    "(dialogue state tracking)",
        metric="joint_goal_em",
        sources=tuple(Source(path=f"woz/woz_{f}_{_lang}.json", url=URL.format(f"woz_{f}_{_lang}.json"),
                             sha256=SHA256[f"woz_{f}_{_lang}.json"]) for f in FILES.values()),
        splits={split: (f"woz/woz_{f}_{_lang}.json",) for split, f in FILES.items()},
        read=partial(read, _lang),
        paper_counts=_paper,
    ))
