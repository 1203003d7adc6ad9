"""Every file under infra/ parses, has the fields its tool requires, and refers to things that exist."""
from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

INFRA = ROOT / "infra"
RAYJOB_SPEC_FIELDS = {  # KubeRay ray.io/v1 RayJobSpec
    "activeDeadlineSeconds", "backoffLimit", "clusterSelector", "deletionStrategy", "entrypoint",
    "entrypointNumCpus", "entrypointNumGpus", "entrypointResources", "jobId", "managedBy", "metadata",
    "rayClusterSpec", "runtimeEnvYAML", "shutdownAfterJobFinishes", "submissionMode", "submitterConfig",
    "submitterPodTemplate", "suspend", "ttlSecondsAfterFinished",
}
RAYCLUSTER_SPEC_FIELDS = {"autoscalerOptions", "enableInTreeAutoscaling", "headGroupSpec", "headServiceAnnotations",
                          "rayVersion", "suspend", "workerGroupSpecs", "gcsFaultToleranceOptions", "managedBy"}
# The infra files each test of this module validates (test_every_infra_file_is_validated closes the loop;
# params overlays and the Python modules are tested in test_overlay.py and test_dvc_yaml.py).
CHECKED = {"ray/cluster.yaml", "ray/rayjob.yaml", "ray/train_job.sh", "docker/Dockerfile", "beam/flink.yaml",
           "beam/spark.yaml", "beam/dataflow.yaml", "mlflow/docker-compose.yaml", "mlflow/Dockerfile",
           "mlflow/env.example", "mlflow/server.sh", "dvc/remote.sh", "README.md"}


def validates(*rel: str) -> list[Path]:
    assert set(rel) <= CHECKED, f"add {set(rel) - CHECKED} to CHECKED"
    return [INFRA / r for r in rel]


def load_yaml_docs(path: Path) -> list:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def shell_syntax_ok(path: Path) -> None:
    proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, f"{path}: {proc.stderr}"


def referenced_repo_paths(text: str) -> set[str]:
    """Paths like infra/params/paper.yaml or infra/ray/train_job.sh mentioned in a file (tests/infra/... is a
    path under tests/, not under infra/)."""
    return set(re.findall(r"(?<![\w/])(?:infra|deca|pipelines|train|eval|tests|bench)/[\w./-]+\.(?:py|sh|yaml|md)\b", text))


def assert_paths_exist(text: str, where: Path) -> None:
    missing = sorted(p for p in referenced_repo_paths(text) if not (ROOT / p).exists())
    assert not missing, f"{where} refers to missing files: {missing}"


def assert_deca_commands_exist(text: str, where: Path) -> None:
    from deca.cli import COMMANDS

    used = set(re.findall(r"\bdeca ([a-z]+)\b", text))
    unknown = sorted(used - set(COMMANDS))
    assert not unknown, f"{where}: `deca {unknown}` is not a subcommand (deca/cli.py COMMANDS)"


def installed_version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


# ----------------------------------------------------------------------------------------------- Ray

def test_ray_cluster_launcher_config_is_valid():
    import json

    import jsonschema
    import ray.autoscaler
    from ray.autoscaler._private.util import prepare_config, validate_config

    (path,) = validates("ray/cluster.yaml")
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    schema = json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())
    jsonschema.validate(config, schema)  # the launcher's schema (ray-schema.json)
    prepared = prepare_config(config)  # merged with the provider's defaults, then validated, as `ray up` does
    validate_config(prepared)
    assert prepared["head_node_type"] in prepared["available_node_types"]
    workers = [t for t in prepared["available_node_types"] if t != prepared["head_node_type"]]
    assert workers and all(prepared["available_node_types"][t]["max_workers"] >= 1 for t in workers)
    # the synced folder is the repository, and the setup installs its exact pins
    assert "." in config["file_mounts"].values()
    setup = " ".join(config["setup_commands"])
    for needed in ("requirements.txt", "constraints.txt", "pip install", "dvc pull"):
        assert needed in setup
    for name in ("requirements.txt", "constraints.txt"):
        assert (ROOT / name).exists()
    assert any("ray start --head" in c for c in config["head_start_ray_commands"])
    assert_paths_exist(path.read_text(encoding="utf-8"), path)


def test_kuberay_rayjob_manifest():
    (path,) = validates("ray/rayjob.yaml")
    docs = load_yaml_docs(path)
    jobs = [d for d in docs if d.get("kind") == "RayJob"]
    assert len(jobs) == 1
    job = jobs[0]
    assert job["apiVersion"] == "ray.io/v1" and job["metadata"]["name"]
    spec = job["spec"]
    assert set(spec) <= RAYJOB_SPEC_FIELDS, f"unknown RayJob fields: {set(spec) - RAYJOB_SPEC_FIELDS}"
    assert spec["entrypoint"] and isinstance(spec["shutdownAfterJobFinishes"], bool)
    env = yaml.safe_load(spec["runtimeEnvYAML"])
    assert isinstance(env, dict) and set(env) <= {"env_vars", "pip", "working_dir", "py_modules", "excludes", "conda"}
    cluster = spec["rayClusterSpec"]
    assert set(cluster) <= RAYCLUSTER_SPEC_FIELDS
    assert cluster["rayVersion"] == installed_version("ray"), "the cluster's Ray must be the pinned one"
    head = cluster["headGroupSpec"]
    assert isinstance(head["rayStartParams"], dict)
    pods = [head["template"]] + [g["template"] for g in cluster["workerGroupSpecs"]]
    for group in cluster["workerGroupSpecs"]:
        assert group["groupName"] and group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
    claims = {d["metadata"]["name"] for d in docs if d.get("kind") == "PersistentVolumeClaim"}
    for pod in pods:
        for c in pod["spec"]["containers"]:
            assert c["name"] and c["image"]
        for v in pod["spec"].get("volumes", []):
            if "persistentVolumeClaim" in v:
                assert v["persistentVolumeClaim"]["claimName"] in claims
        mounts = {m["name"] for c in pod["spec"]["containers"] for m in c.get("volumeMounts", [])}
        assert mounts <= {v["name"] for v in pod["spec"].get("volumes", [])}
    gpu_workers = [g for g in cluster["workerGroupSpecs"]
                   if any("nvidia.com/gpu" in c["resources"].get("limits", {}) for c in g["template"]["spec"]["containers"])]
    assert gpu_workers, "training runs on GPU workers"
    # the entrypoint runs the job script with overlays that exist, and asks for as many GPUs as there are
    words = shlex.split(spec["entrypoint"])
    script = " ".join(words)
    assert "infra/ray/train_job.sh" in script
    assert_paths_exist(script, path)
    gpu_overlay = yaml.safe_load((INFRA / "params" / "gpu.yaml").read_text(encoding="utf-8"))
    replicas = sum(g["replicas"] for g in gpu_workers)
    assert gpu_overlay["train"]["num_workers"] * gpu_overlay["train"]["gpus_per_worker"] <= replicas
    assert_paths_exist(path.read_text(encoding="utf-8"), path)


def test_train_job_script():
    (path,) = validates("ray/train_job.sh")
    shell_syntax_ok(path)
    text = path.read_text(encoding="utf-8")
    assert "python\" -m infra.overlay" in text.replace("$PYTHON", "python") or "-m infra.overlay" in text
    # every dvc invocation uses options this DVC has, on stages dvc.yaml defines
    repro_help = subprocess.run([str(ROOT / ".venv/bin/dvc"), "repro", "--help"], capture_output=True, text=True,
                                env={"DVC_NO_ANALYTICS": "1", "PATH": "/usr/bin:/bin"}).stdout
    for flag in re.findall(r'repro ((?:--[\w-]+ ?)+)', text)[0].split():
        assert flag in repro_help, f"dvc repro has no {flag}"
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert re.search(r"repro [-\w ]*\breport\b", text) and "report" in stages
    assert_paths_exist(text, path)


def test_docker_image_definition():
    (path,) = validates("docker/Dockerfile")
    text = path.read_text(encoding="utf-8")
    base = re.search(r"^ARG RAY_IMAGE=(\S+)", text, re.M).group(1)
    assert base.startswith(f"rayproject/ray:{installed_version('ray')}-py311"), base
    assert re.search(r"^FROM \$\{RAY_IMAGE\}", text, re.M)
    for line in re.findall(r"^COPY (?:--\S+ )*(.+)$", text, re.M):
        *sources, _dest = line.split()
        for src in sources:
            assert (ROOT / src).exists(), f"{path}: COPY source {src} does not exist"
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    for heavy in (".venv", "data", ".git", "checkpoints"):
        assert heavy in ignored


# ---------------------------------------------------------------------------------------------- Beam

@pytest.mark.parametrize("name,runner", [("flink", "FlinkRunner"), ("spark", "SparkRunner"),
                                         ("dataflow", "DataflowRunner")])
def test_beam_runner_options(name, runner):
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
    from apache_beam.runners.runner import create_runner

    from deca.config import PrepareConfig
    from infra.overlay import combine
    from pipelines.beam_options import beam_flags, unknown_flags

    (path,) = validates(f"beam/{name}.yaml")
    overlay, merged = combine([path], ROOT / "params.yaml")  # validates against deca.config and the registry
    cfg = PrepareConfig(**{k: v for k, v in merged["prepare"].items()})
    assert cfg.runner == runner
    flags = beam_flags(cfg)
    assert unknown_flags(flags) == [], "every option must be a Beam pipeline option"
    options = PipelineOptions(flags)
    options.get_all_options()  # argparse checks choices (e.g. --flink_version) here
    assert options.view_as(StandardOptions).runner == runner
    assert type(create_runner(runner)).__name__ == runner
    assert_paths_exist(path.read_text(encoding="utf-8"), path)


# -------------------------------------------------------------------------------------------- MLflow

def mlflow_server_options() -> set[str]:
    import mlflow.cli

    return {opt for p in mlflow.cli.server.params for opt in p.opts}


def test_mlflow_compose_stack():
    compose_path, dockerfile, env_example = validates("mlflow/docker-compose.yaml", "mlflow/Dockerfile",
                                                      "mlflow/env.example")
    compose = yaml.safe_load(compose_path.read_text(encoding="utf-8"))
    services = compose["services"]
    assert {"postgres", "minio", "mlflow", "create-bucket"} <= set(services)
    for name, svc in services.items():
        assert "image" in svc or "build" in svc, name
        for dep in svc.get("depends_on", {}):
            assert dep in services
    mlflow = services["mlflow"]
    cmd = mlflow["command"]
    assert cmd[:2] == ["mlflow", "server"]
    flags = [c for c in cmd if c.startswith("--")]
    assert set(flags) <= mlflow_server_options(), set(flags) - mlflow_server_options()
    assert cmd[cmd.index("--backend-store-uri") + 1].startswith("postgresql://")
    assert cmd[cmd.index("--artifacts-destination") + 1].startswith("s3://")
    assert "--serve-artifacts" in cmd
    assert mlflow["environment"]["MLFLOW_S3_ENDPOINT_URL"] == "http://minio:9000"
    assert (compose_path.parent / mlflow["build"]["context"] / mlflow["build"]["dockerfile"]) == dockerfile
    assert re.search(rf"^FROM ghcr.io/mlflow/mlflow:v{re.escape(installed_version('mlflow'))}$",
                     dockerfile.read_text(encoding="utf-8"), re.M)
    assert volumes_declared(compose)
    # every variable the stack requires has a line in env.example
    required = set(re.findall(r"\$\{(\w+):\?", compose_path.read_text(encoding="utf-8")))
    defined = {line.split("=", 1)[0] for line in env_example.read_text(encoding="utf-8").splitlines()
               if line and not line.startswith("#")}
    assert required and required <= defined


def volumes_declared(compose: dict) -> bool:
    named = set(compose.get("volumes") or {})
    used = {v.split(":", 1)[0] for svc in compose["services"].values() for v in svc.get("volumes", [])
            if not v.startswith((".", "/"))}
    return used <= named


def test_mlflow_server_script_uses_real_options():
    (path,) = validates("mlflow/server.sh")
    shell_syntax_ok(path)
    flags = set(re.findall(r"(--[a-z][\w-]+)", path.read_text(encoding="utf-8")))
    assert {"--backend-store-uri", "--artifacts-destination", "--serve-artifacts"} <= flags
    assert flags <= mlflow_server_options()


# ----------------------------------------------------------------------------------------------- DVC

@pytest.fixture
def dvc_repo(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([str(ROOT / ".venv/bin/dvc"), "init", "-q"], cwd=tmp_path, check=True,
                   env={"DVC_NO_ANALYTICS": "1", "PATH": "/usr/bin:/bin"})
    return tmp_path


def run_remote_script(repo: Path, *args: str) -> subprocess.CompletedProcess:
    (path,) = validates("dvc/remote.sh")
    return subprocess.run(["bash", str(path), *args], cwd=repo, capture_output=True, text=True,
                          env={"DVC_NO_ANALYTICS": "1", "PATH": "/usr/bin:/bin", "DVC": str(ROOT / ".venv/bin/dvc")})


def test_dvc_remote_script_sets_a_valid_default_remote(dvc_repo, tmp_path_factory):
    from dvc.repo import Repo

    store = tmp_path_factory.mktemp("remote")
    proc = run_remote_script(dvc_repo, str(store))
    assert proc.returncode == 0, proc.stderr
    proc = run_remote_script(dvc_repo, "s3://bucket/decanlp", "cloud")
    assert proc.returncode == 0, proc.stderr
    config = Repo(str(dvc_repo)).config  # DVC validates the file against its schema on load
    assert config["core"]["remote"] == "cloud"
    assert config["remote"]["storage"]["url"] == str(store)
    assert config["remote"]["cloud"]["url"] == "s3://bucket/decanlp"
    # and it moves data: a tracked file goes up and comes back
    (dvc_repo / "blob.txt").write_text("data\n")
    dvc = [str(ROOT / ".venv/bin/dvc")]
    env = {"DVC_NO_ANALYTICS": "1", "PATH": "/usr/bin:/bin"}
    subprocess.run(dvc + ["add", "-q", "blob.txt"], cwd=dvc_repo, check=True, env=env)
    subprocess.run(dvc + ["push", "-q", "-r", "storage"], cwd=dvc_repo, check=True, env=env)
    assert any(p.is_file() for p in store.rglob("*"))


def test_dvc_remote_script_rejects_unknown_schemes(dvc_repo):
    proc = run_remote_script(dvc_repo, "ftp://host/x")
    assert proc.returncode == 2 and "unsupported remote URL" in proc.stderr
    assert run_remote_script(dvc_repo).returncode == 2  # no URL: usage
    assert run_remote_script(dvc_repo, "--bogus").returncode == 2


def test_dvc_remote_script_help_and_rerun(dvc_repo, tmp_path):
    """--help prints the usage; a relative directory is created and stored absolute; a second run with the
    same arguments leaves the same configuration (idempotent)."""
    shown = run_remote_script(dvc_repo, "--help")
    assert shown.returncode == 0 and "infra/dvc/remote.sh URL [NAME]" in shown.stdout
    config = dvc_repo / ".dvc" / "config"
    assert run_remote_script(dvc_repo, "store", "local").returncode == 0
    first = config.read_text()
    assert (dvc_repo / "store").is_dir() and f"url = {dvc_repo / 'store'}" in first
    assert run_remote_script(dvc_repo, "store", "local").returncode == 0
    assert config.read_text() == first


# -------------------------------------------------------------------------------------- docs, closure

def test_infra_readme_refers_to_what_exists():
    (path,) = validates("README.md")
    text = path.read_text(encoding="utf-8")
    assert_paths_exist(text, path)
    assert_deca_commands_exist(text, path)
    for sub in sorted(p for p in INFRA.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        rel = sub.relative_to(INFRA).as_posix()
        if rel in ("README.md", "__init__.py"):
            continue
        names = (f"infra/{rel}", "infra." + rel[:-3].replace("/", ".")) if rel.endswith(".py") else (f"infra/{rel}",)
        assert any(n in text for n in names), f"infra/README.md does not describe infra/{rel}"
    for module in set(re.findall(r"python -m (infra\.\w+)", text)):
        assert (ROOT / (module.replace(".", "/") + ".py")).exists(), module


def test_every_infra_file_is_validated():
    """Each infra file is checked by a test above, or by test_overlay.py / test_dvc_yaml.py."""
    others = {f"params/{p.name}" for p in (INFRA / "params").glob("*.yaml")}  # test_overlay.py
    others |= {"overlay.py", "stages.py", "codedeps.py", "__init__.py"}  # test_overlay.py, test_dvc_yaml.py
    others |= {"validate_cli.py"}  # test_validate_cli.py
    others |= {"repro.py"}  # test_repro.py
    others |= {"jobs.py", "jobs_run.py", "repro_cli.py"}  # test_jobs.py
    others |= {"params_yaml.py"}  # test_params_yaml.py, test_overlay.py
    files = {p.relative_to(INFRA).as_posix() for p in INFRA.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    unchecked = sorted(files - CHECKED - others)
    assert not unchecked, f"infra files no test validates: {unchecked}"


@pytest.mark.slow
def test_mlflow_server_script_serves_runs_and_artifacts(tmp_path):
    """Start infra/mlflow/server.sh on a free loopback port, log a run with an artifact, read both back."""
    import os
    import signal
    import socket
    import time
    import urllib.request

    from mlflow import MlflowClient

    (path,) = validates("mlflow/server.sh")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MLFLOW": str(ROOT / ".venv/bin/mlflow")}
    env.pop("MLFLOW_TRACKING_URI", None)
    server = subprocess.Popen(["bash", str(path), str(tmp_path / "store"), str(port), "127.0.0.1"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, server.stdout.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the server did not come up in 90 s"
            time.sleep(0.5)
        client = MlflowClient(tracking_uri=url)
        exp = client.create_experiment("decanlp")
        run = client.create_run(exp, run_name="pipeline")
        client.log_metric(run.info.run_id, "validation/decascore", 123.0)
        (tmp_path / "report.md").write_text("# report\n")
        client.log_artifact(run.info.run_id, str(tmp_path / "report.md"), "evaluation")
        client.set_terminated(run.info.run_id)
        found = client.search_runs([exp])
        assert [r.data.metrics["validation/decascore"] for r in found] == [123.0]
        assert [a.path for a in client.list_artifacts(run.info.run_id, "evaluation")] == ["evaluation/report.md"]
        assert (tmp_path / "store" / "mlflow.db").exists()
        assert list((tmp_path / "store" / "artifacts").rglob("report.md"))  # proxied into the store's folder
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
