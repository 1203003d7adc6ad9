"""deca.checks.check_params, the one check of params: every problem at once, each after where its value came
from (params.yaml and line, an overlay, --set), with the checks of other layers passed in."""
import dataclasses

import pytest

from deca.checks import ParamsError, check_params, checked_params, load_params
from deca.config import CustomTaskConfig, Params, read_params
from deca.errors import ConfigError


def refused(params, **kwargs) -> ParamsError:
    with pytest.raises(ParamsError) as err:
        check_params(params, **kwargs)
    return err.value


def test_key_and_type_errors_of_an_override_name_the_override_not_the_file():
    with pytest.raises(ConfigError, match=r"^--set train.iterations=abc: train.iterations: expected an integer"):
        load_params("params.yaml", overrides={"train.iterations": "abc"})
    with pytest.raises(ConfigError, match=r"^--set train.itrations=5: train: unknown key\(s\) 'itrations' "
                                          r"\(did you mean 'iterations'\?\)"):
        load_params("params.yaml", overrides={"train.itrations": 5})


def test_key_and_type_errors_in_the_file_name_its_line(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("train:\n  iterations: 10\n  betas: [0.9, x]\nmodel:\n  dimenson: 8\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{path}:3: train.betas\[1\]: expected a number"):
        load_params(path)
    path.write_text("train:\n  iterations: 10\nmodel:\n  dimenson: 8\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{path}:4: model: unknown key\(s\) 'dimenson'"):
        load_params(path)


def test_an_override_origin_can_be_an_overlay_line(tmp_path):
    params, origin = read_params("params.yaml", {"train.lr": -1.0}, {"train.lr": "paper.yaml:7"})
    err = refused(params, origin=origin, commands=())
    assert str(err) == "paper.yaml:7: train.lr = -1.0: must be > 0"
    assert [p.key for p in err.problems] == ["train.lr"]


def test_every_problem_at_once_each_once_after_where_it_came_from():
    params = load_params("params.yaml")
    params.train.tasks, params.data.tasks = ["nosuchtask"], ["mrqa.zz*"]
    params.prepare.task_options["sqaud"] = {}
    origin = {"train.tasks": "--set train.tasks=[nosuchtask]", "data.tasks": "params.yaml:3"}
    lines = str(refused(params, origin=origin)).splitlines()
    assert lines[0] == "bad parameter value(s):"
    assert lines[1] == "  params.yaml:3: data.tasks = ['mrqa.zz*']: task pattern 'mrqa.zz*' matches no task " \
                       "(did you mean mrqa.*?); `deca ls` lists them"
    assert lines[2].startswith("  --set train.tasks=[nosuchtask]: train.tasks = ['nosuchtask']: unknown task 'nosuchtask'")
    assert lines[3] == "  params: prepare.task_options.sqaud: no task has the key 'sqaud' (did you mean 'squad'?)"
    assert len(lines) == 4


def test_each_command_checks_what_it_reads():
    params = load_params("params.yaml")
    params.evaluate.tasks = ["nosuchtask"]
    check_params(params, commands=["prepare", "train"])
    assert "evaluate.tasks" in str(refused(params, commands=["evaluate"]))
    check_params(params, commands=())  # loading: values and custom tasks only


def test_the_origin_travels_explicitly_from_reading_to_the_checks():
    """Params carry nothing but their fields: where a value came from is read_params' second value, passed
    to the checks (none passed: "params")."""
    params, origin = read_params("params.yaml", {"train.tasks": ["nosuchtask"]})
    assert str(refused(params, origin=origin, commands=["train"])).startswith("--set train.tasks=['nosuchtask']: ")
    assert str(refused(params, commands=["train"])).startswith("params: train.tasks = ")
    assert vars(params).keys() == {f.name for f in dataclasses.fields(Params)}  # no hidden attribute
    with pytest.raises(ParamsError, match=r"^--set train.tasks=\['nosuchtask'\]: "):
        checked_params("params.yaml", {"train.tasks": ["nosuchtask"]}, commands=["train"])


def test_other_layers_checks_are_passed_in_and_keyed_by_what_they_name():
    def schedule(train_cfg, tasks):
        raise ConfigError(f"train.strategy: unknown strategy {train_cfg.strategy!r}")

    def vectors(source):
        raise ConfigError("not there")

    params, origin = read_params("params.yaml", {"train.strategy": "zigzag"})
    check_params(params, origin)  # no schedule given: the strategy is the schedule's business
    err = refused(params, origin=origin, schedule=schedule, vectors=vectors)
    assert [(p.key, p.involved()) for p in err.problems] == [
        ("train.strategy", {"train.strategy"}), ("model.word_vectors", {"model.word_vectors"})]
    assert "--set train.strategy=zigzag: train.strategy: unknown strategy 'zigzag'" in str(err)
    assert "model.word_vectors = 'glove-6b-50d': not there" in str(err)


def test_the_gate_layer_checks_register_for_deca_register_and_validate(tmp_path):
    """Issue 42: a bad register.replicates is one line naming its key and line, not a traceback in the gate."""
    def gate(register):
        raise ConfigError(f"register.replicates = {register.replicates}: must be between 200 and 1,048,576")

    path = tmp_path / "params.yaml"
    path.write_text("register:\n  gated: [champion]\n  replicates: 0\n", encoding="utf-8")
    params, origin = read_params(path)
    check_params(params, origin, commands=["train"], gate=gate)  # only the commands that read register
    err = refused(params, origin=origin, commands=["register"], gate=gate)
    assert [p.key for p in err.problems] == ["register.replicates"]
    assert str(err) == f"{path}:3: register.replicates = 0: must be between 200 and 1,048,576"


def test_a_layer_problem_about_a_value_already_refused_is_left_out():
    def schedule(train_cfg, tasks):
        raise ConfigError(f"train.strategy x: leaves none of the train.iterations = {train_cfg.iterations}")

    params = Params()
    params.train.iterations = -5
    err = refused(params, schedule=schedule)
    assert [p.key for p in err.problems] == ["train.iterations"]


def test_a_bad_custom_task_is_one_problem_not_a_cascade_of_unknown_names():
    params = Params()
    params.data.tasks = params.train.tasks = ["myqa"]
    params.custom_tasks = {"MyQA": CustomTaskConfig(files={"train": "t.jsonl"})}
    err = refused(params)
    assert [p.key for p in err.problems] == ["custom_tasks.MyQA"] and "lowercase" in str(err)
