"""WOZ dialogue state tracking metrics (decaNLP's `computeDialogue`): joint goal, turn goal and request EM.

A WOZ answer is the *change* of state at one turn, written ``"slot: value, slot: value; request, request"``
(``"; request"`` with no informs, ``"none"`` when nothing changed). For each dialogue, turns are taken in
**numeric** order (project decision: decaNLP sorted the ids as strings, so ``_10`` came before ``_2`` and
dialogues of 11+ turns were scored out of order), the predicted inform changes are accumulated into a
belief state (a later value overwrites a slot; removals cannot be expressed) and compared with the gold
cumulative state after that turn:

- ``joint_goal_em`` (the decaScore's dsEM): predicted cumulative state == gold cumulative state;
- ``turn_goal_em``: this turn's predicted inform change == the gold change;
- ``turn_request_em``: this turn's request *lists* are equal (order-sensitive, never accumulated). As in
  decaNLP, a ``"none"``/empty change has no request list at all while ``"x: y;"`` has the list ``['']``,
  so those two never match;
- ``avg_dialogue`` = (joint_goal_em + turn_request_em) / 2.

Parsing follows decaNLP's `to_delta_state`: ``None``/``none``, empty or ``;`` give an empty change;
otherwise the line must split on ``;`` into exactly two parts, informs split on ``,`` then ``k: v``
(an item without exactly one ``:`` is skipped), requests split on ``,``. Anything malformed is an empty
change, never an error.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby
from typing import Mapping, Sequence


@dataclass
class Delta:
    """One turn's change of state. `request` is None for an empty/unparseable change (decaNLP's `{}`)."""

    inform: dict[str, str] = field(default_factory=dict)
    request: list[str] | None = None


def to_delta_state(line: str | None) -> Delta:
    """Parse a change-of-state string; malformed input gives an empty change."""
    if line is None:
        return Delta()
    stripped = line.strip()
    if stripped.lower() == "none" or stripped in ("", ";"):
        return Delta()
    parts = line.split(";")
    if len(parts) != 2:
        return Delta()
    inform_part, request_part = ([y.strip() for y in x.strip().split(",")] for x in parts)
    inform: dict[str, str] = {}
    for item in inform_part:
        kv = item.split(":")
        if len(kv) == 2:
            inform[kv[0].strip()] = kv[1].strip()
    return Delta(inform=inform, request=request_part)


@dataclass(frozen=True)
class Turn:
    """The gold of one WOZ turn (the `gold` JSON of the processed schema, plus the gold answer string)."""

    dialogue_id: str
    turn: int
    state: Mapping[str, str]  # gold cumulative inform state after this turn
    answer: str  # gold change-of-state string of this turn


def turn_from_gold(gold: Mapping, answer: str) -> Turn:
    """Build a Turn from a processed row's parsed `gold` JSON and its `answer`."""
    try:
        return Turn(dialogue_id=str(gold["dialogue_id"]), turn=int(gold["turn"]),
                    state={str(k).lower(): str(v).lower() for k, v in dict(gold["state"]).items()},
                    answer=answer.lower())
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"WOZ gold must have dialogue_id, turn (int) and state (mapping); got {gold!r}") from exc


def per_turn(predictions: Sequence[str], turns: Sequence[Turn]) -> dict[str, list[int]]:
    """joint_goal_em, turn_request_em and turn_goal_em of every turn (1 or 0, in input order); the joint goal of
    a turn depends on the predictions of the earlier turns of its dialogue."""
    if len(predictions) != len(turns):
        raise ValueError(f"{len(predictions)} predictions but {len(turns)} gold turns")
    if not turns:
        raise ValueError("no examples to score")
    order = sorted(range(len(turns)), key=lambda i: (turns[i].dialogue_id, turns[i].turn))
    seen = set()
    out = {name: [0] * len(turns) for name in ("joint_goal_em", "turn_request_em", "turn_goal_em")}
    for dialogue_id, indices in groupby(order, key=lambda i: turns[i].dialogue_id):
        state: dict[str, str] = {}
        for i in indices:
            key = (dialogue_id, turns[i].turn)
            if key in seen:
                raise ValueError(f"WOZ dialogue {dialogue_id!r} has turn {turns[i].turn} twice")
            seen.add(key)
            delta = to_delta_state(predictions[i])
            gold_delta = to_delta_state(turns[i].answer)
            state.update(delta.inform)
            out["joint_goal_em"][i] = int(state == dict(turns[i].state))
            out["turn_goal_em"][i] = int(delta.inform == gold_delta.inform)
            out["turn_request_em"][i] = int(delta.request == gold_delta.request)
    return out


def dialogue_metrics(predictions: Sequence[str], turns: Sequence[Turn]) -> dict[str, float]:
    """joint_goal_em, turn_request_em, turn_goal_em and avg_dialogue (×100) over all turns."""
    turn = per_turn(predictions, turns)
    n = len(turns)
    out = {name: 100.0 * sum(turn[name]) / n for name in ("joint_goal_em", "turn_request_em", "turn_goal_em")}
    out["avg_dialogue"] = (out["joint_goal_em"] + out["turn_request_em"]) / 2
    return out
