import json

import pytest

from deca.config import TrainConfig
from deca.errors import ConfigError
from deca.registry import DECANLP
from train.schedule import Phase, Schedule, build_schedule, from_config


def tasks_of(schedule, start, n):
    return [schedule.position(i).task for i in range(start, start + n)]


def test_fully_joint_is_round_robin_in_task_order():
    s = build_schedule("fully_joint", ["a", "b", "c"])
    assert tasks_of(s, 0, 7) == ["a", "b", "c", "a", "b", "c", "a"]
    p = s.position(4)
    assert (p.phase, p.phase_name, p.round, p.slot, p.task) == (0, "round_robin", 1, 1, "b")


def test_batches_per_task_repeat_within_a_round():
    s = build_schedule("fully_joint", ["a", "b"], batches_per_task={"a": 3})
    assert tasks_of(s, 0, 8) == ["a", "a", "a", "b", "a", "a", "a", "b"]
    assert s.position(5).round == 1 and s.position(5).slot == 1


def test_anti_curriculum_squad_then_fully_joint_at_the_configured_iteration():
    tasks = list(DECANLP)
    s = build_schedule("anti_curriculum_squad", tasks, phase_iterations=5)
    assert tasks_of(s, 0, 5) == ["squad"] * 5
    p = s.position(5)
    assert (p.phase, p.phase_name, p.round, p.slot, p.task) == (1, "round_robin", 0, 0, "squad")
    assert tasks_of(s, 5, 10) == tasks
    assert s.phase_starts() == [0, 5]


@pytest.mark.parametrize("name, first", [
    ("curriculum", ["sst", "srl", "zre", "woz.en", "wikisql", "schema"]),
    ("anti_curriculum_squad_iwslt_cnn", ["squad", "iwslt.en.de", "cnn_dailymail"]),
    ("anti_curriculum_squad_iwslt_cnn_mnli", ["squad", "iwslt.en.de", "cnn_dailymail", "multinli.in.out"]),
])
def test_presets_first_phase(name, first):
    s = build_schedule(name, list(DECANLP), phase_iterations=len(first) * 2)
    assert tasks_of(s, 0, len(first) * 2) == first * 2
    assert s.position(len(first) * 2).phase == 1
    assert s.tasks == first + [t for t in DECANLP if t not in first]


def test_preset_phase_keeps_only_trained_tasks():
    s = build_schedule("curriculum", ["squad", "sst", "schema"], phase_iterations=4)
    assert tasks_of(s, 0, 4) == ["sst", "schema", "sst", "schema"]
    assert tasks_of(s, 4, 3) == ["squad", "sst", "schema"]


def test_preset_without_any_first_phase_task_is_fully_joint():
    s = build_schedule("anti_curriculum_squad", ["sst", "schema"], phase_iterations=4)
    assert len(s.phases) == 1 and tasks_of(s, 0, 3) == ["sst", "schema", "sst"]


def test_single_task():
    s = build_schedule("single_task", ["sst"])
    assert tasks_of(s, 0, 3) == ["sst"] * 3
    with pytest.raises(ConfigError, match="exactly one task"):
        build_schedule("single_task", ["sst", "schema"])


def test_custom_phases_from_config():
    cfg = TrainConfig(strategy="custom", tasks=["a", "b", "c"], phases=[
        {"name": "warm", "tasks": ["b"], "iterations": 2},
        {"tasks": ["a", "c"], "iterations": 3, "batches_per_task": {"c": 2}},
    ])
    s = from_config(cfg, ["a", "b", "c"])
    assert tasks_of(s, 0, 9) == ["b", "b", "a", "c", "c", "a", "b", "c", "a"]
    assert [s.position(i).phase_name for i in (0, 2, 5)] == ["warm", "phase1", "round_robin"]
    assert "warm [0-1]: b" in s.describe()


def test_a_custom_phase_without_iterations_lasts_phase_iterations():
    """infra/params/table3.yaml's anti-curriculum: one phase length for it and the curriculum preset."""
    cfg = TrainConfig(strategy="custom", tasks=["a", "b"], phase_iterations=3, iterations=10,
                      phases=[{"name": "a_first", "tasks": ["a"]}])
    s = from_config(cfg, ["a", "b"])
    assert tasks_of(s, 0, 5) == ["a", "a", "a", "a", "b"]
    assert "a_first [0-2]: a" in s.describe()


@pytest.mark.parametrize("phases, match", [
    ([{"tasks": ["z"], "iterations": 2}], "not in train.tasks"),
    ([{"tasks": ["a"], "iterations": 0}], "positive integer"),
    ([{"tasks": [], "iterations": 2}], "non-empty"),
    ([{"tasks": ["a"], "iterations": 2, "length": 3}], "expected a mapping with keys"),
])
def test_custom_phase_errors(phases, match):
    with pytest.raises(ConfigError, match=match):
        build_schedule("custom", ["a", "b"], phases=phases)


def test_unknown_strategy_and_tasks():
    with pytest.raises(ConfigError, match="unknown strategy 'jointly'.*fully_joint"):
        build_schedule("jointly", ["a"])
    with pytest.raises(ConfigError, match="batches_per_task"):
        build_schedule("fully_joint", ["a"], batches_per_task={"b": 2})
    with pytest.raises(ValueError, match="endless"):
        Schedule([Phase("x", ("a",), 3)])


def test_position_is_serializable_and_pure():
    s = build_schedule("anti_curriculum_squad", ["squad", "sst"], phase_iterations=3)
    a = [s.position(i).to_dict() for i in range(10)]
    b = [s.position(i).to_dict() for i in reversed(range(10))][::-1]
    assert a == b
    assert json.loads(json.dumps(a[4])) == {"iteration": 4, "phase": 1, "phase_name": "round_robin",
                                            "round": 0, "slot": 1, "task": "sst"}


def test_a_preset_first_phase_longer_than_the_run_is_refused():
    from deca.config import TrainConfig
    from deca.errors import ConfigError
    from train.schedule import from_config

    cfg = TrainConfig(strategy="anti_curriculum_squad", iterations=200, phase_iterations=75000)
    with pytest.raises(ConfigError, match="leaves none of the train.iterations = 200"):
        from_config(cfg, ["squad", "sst"])
    assert from_config(TrainConfig(strategy="anti_curriculum_squad", iterations=200, phase_iterations=50),
                       ["squad", "sst"]).describe()
    from_config(cfg, ["squad"])  # the first phase is every task: nothing to refuse
