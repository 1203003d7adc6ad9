"""The MLflow model of a trained MQAN: a pyfunc model that answers exactly as `deca predict` does.

A logged model (``runs:/<run id>/model``; ``models:/<name>/<version>`` once registered, infer/registry.py)
holds:

- ``artifacts/model.pt``: the checkpoint, self-contained with its vocabulary (mqan/checkpoint.py);
- ``artifacts/vectors.json``: the frozen pre-trained vectors the model needs, by reference (name,
  fingerprint, size) and where they come from: a packaged source (``glove-6b-50d``) is a pip requirement of
  the model; a file source (GloVe 840B, charNgram) is referenced by its absolute path on the machine that
  logged it (2.6 GB are not copied into every model). A machine without them is refused, in one line
  naming the source and how to install it (`MissingVectorSource`); the fingerprint is checked on load;
- ``code/deca``, ``code/train``: the project code it runs, so that `mlflow models serve` needs no checkout;
- ``requirements.txt``: what that code imports, pinned as the project's requirements.txt pins it;
- a signature: context, question[, id] -> id, answer, tokens (per answer token: token, source, the three
  source weights, probability), params ``max_answer_length`` and ``batch_size``; and an input example
  (an example question of each task the model was trained on, infer/serve/examples.py).

`DecaModel.predict` takes a DataFrame (or records) of requests. They are checked as the lines of a
`deca predict --input` file are (infer.predict.read_requests: the same limits; a request without id
gets its 1-based row number), prepared with request_row / lowercase_of and decoded by mqan.decode
(explain=True, batches of `batch_size`, 64 as `deca predict`): the objects `deca predict` writes, as rows.
A bad request or param is a BadModelInput (infer/mlflow_errors.py): one line naming the field, and under
`mlflow models serve` a 400 with that line as its message.
Load-time options (``mlflow.pyfunc.load_model(uri, model_config={...})``, or for `mlflow models serve`
$MLFLOW_PYFUNC_INFERENCE_CONFIG as JSON): ``device`` (auto, cpu, cuda[:N]) and ``word_vectors`` /
``char_vectors`` (where a file source is on this machine, when not at its recorded path).
The model is logged "from code": infer/mlflow_entry.py is the file MLflow runs to build it, so loading a
model runs the code stored with it (README: which registries to trust).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

import mlflow
import pandas as pd
from mlflow.models import ModelSignature
from mlflow.types.schema import Array, ColSpec, Object, ParamSchema, ParamSpec, Property, Schema

import deca
from deca.errors import ConfigError, DataError, DecaError
from deca.io import file_sha256
from infer.limits import InputLimits
from infer.mlflow_errors import FIX, BadModelInput, one_line, refuse_deep_json
from infer.serve.examples import EXAMPLES
from mqan.allocator import keep_large_blocks
from mqan.vectors import PACKAGED, open_source
from mqan.vocab import Vocab

NAME = "model"  # the model's name in its run: runs:/<run id>/model
ENTRY = Path(__file__).with_name("mlflow_entry.py")
# distributions the model's code imports (mqan, infer/predict.py, deca/) and the pyfunc wrapper
REQUIRED = ("torch", "numpy", "pyarrow", "pandas", "revtok", "tqdm", "PyYAML", "mlflow")
SOURCE_KEYS = ("word_vectors", "char_vectors")
CHECKPOINT_TAG = "deca.checkpoint_sha256"
# what load_model(uri, model_config={...}) (or $MLFLOW_PYFUNC_INFERENCE_CONFIG) may set: MLflow takes only the
# keys logged with the model. "" = the recorded vector source.
LOAD_OPTIONS = {"device": "auto", "word_vectors": "", "char_vectors": ""}


class MissingVectorSource(DecaError):
    """A pre-trained vector source the model needs is not on this machine (one line: which, and how to get it)."""


class DecaModel(mlflow.pyfunc.PythonModel):
    """The pyfunc model: `load_context` loads the checkpoint once, `predict` answers as `deca predict`."""

    def load_context(self, context) -> None:
        """Load the checkpoint of the model's artifacts with its vectors, on model_config's device."""
        from infer.predict import lowercase_of, pick_device

        config = dict(context.model_config or {})
        keep_large_blocks()
        refuse_deep_json()  # under `mlflow models serve`: a body too deep to parse is a 400, not a 500
        self.device = pick_device(str(config.get("device", "auto")), "model_config device")
        refs = json.loads(Path(context.artifacts["vectors"]).read_text(encoding="utf-8"))
        self.model, self.vocab, extra = load_logged(Path(context.artifacts["checkpoint"]), refs, self.device,
                                                    config)
        self.lowercase = lowercase_of(extra)

    def predict(self, context, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> pd.DataFrame:
        """One row per request: id, answer, tokens ([{token, source, weights, probability}]), as `deca predict`."""
        from infer.predict import request_row
        from mqan.decode import decode

        asked, max_len, batch_size = checked_input(model_input, params or {})
        rows = [request_row(r["context"], r["question"], r["id"], self.lowercase) for r in asked]
        answers = decode(self.model, self.vocab, rows, batch_size, max_len, self.device, explain=True)
        return pd.DataFrame([a.to_json(r["id"]) for r, a in zip(rows, answers)], columns=["id", "answer", "tokens"])


class ModelLimits(InputLimits):
    """The logged model's limits: `deca predict`'s defaults, which no option of `mlflow models serve` raises."""

    RAISE = ""


def checked_input(model_input, params: Mapping[str, Any]) -> tuple[list[dict], int | None, int]:
    """(requests, max_answer_length, batch_size) of one predict call, checked as `deca predict` checks them; the
    first bad one is a BadModelInput: its one line names the field, and `mlflow models serve` answers 400."""
    from infer.predict import check_answer_length, read_requests

    try:
        max_len = check_answer_length(params.get("max_answer_length"), "params max_answer_length")
        batch_size = params.get("batch_size")
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"params batch_size must be at least 1 (requests decoded together), got {batch_size}")
        asked = read_requests(request_lines(model_input), "model input", ModelLimits(), FIX)
        return asked, max_len, batch_size or 64
    except (ConfigError, DataError) as exc:
        raise BadModelInput(one_line(exc)) from exc


def request_lines(model_input) -> list[str]:
    """The requests of a DataFrame (or a record, or a list of records) as the JSON lines `deca predict --input`
    reads; missing values (NaN) become null."""
    frame = model_input if isinstance(model_input, pd.DataFrame) else pd.DataFrame(
        [model_input] if isinstance(model_input, Mapping) else list(model_input))
    records = frame.astype(object).where(frame.notna(), None).to_dict("records")
    return [json.dumps(record, ensure_ascii=False, default=str) for record in records]


def load_logged(checkpoint: Path, refs: Mapping[str, dict], device, config: Mapping[str, Any]):
    """(model in eval mode on `device`, vocabulary, the checkpoint's extra) of a logged checkpoint, its vector
    sources found on this machine (`local_source`) and checked against the recorded fingerprints."""
    from mqan.checkpoint import model_from_payload, read_checkpoint

    sources = {key: open_source(local_source(key, ref, config.get(key))) for key, ref in refs.items()}
    payload = read_checkpoint(checkpoint, device)
    vocab = Vocab(payload["vocab_tokens"], int(payload["model_config"]["max_generative_vocab"]))
    model = model_from_payload(checkpoint, payload, vocab, sources.get("word_vectors"), sources.get("char_vectors"))
    return model.to(device).eval(), vocab, payload["extra"]


def describe(ref: Mapping[str, Any]) -> str:
    """'<words> words x <dim>, fingerprint <12 hex>' of a vector source reference."""
    return f"{ref['words']:,} words x {ref['dim']}, fingerprint {ref['fingerprint'][:12]}"


def local_source(key: str, ref: Mapping[str, Any], override: str | None = None) -> str:
    """The spec that opens the source `ref` (an entry of vectors.json) here; MissingVectorSource, one line
    naming the source and how to install it, when this machine lacks it."""
    if "package" in ref:
        if importlib.util.find_spec(ref["module"]) is None:
            raise MissingVectorSource(
                f"model.{key}: this model needs the vectors {ref['spec']} ({describe(ref)}) from the package "
                f"{ref['package'].split('==')[0]}, which is not installed here: pip install {ref['package']}")
        return ref["spec"]
    for candidate in (override, ref["spec"], ref["path"]):
        if candidate and Path(candidate).exists():
            return str(candidate)
    raise MissingVectorSource(
        f"model.{key}: this model needs the vectors {ref['path']} ({describe(ref)}), which are not on this "
        f"machine: put that file there (the URLs of GloVe and charNgram are in infra/params/paper.yaml), or load "
        f"with model_config={{'{key}': PATH}}")


def vector_references(payload: Mapping[str, Any]) -> dict[str, dict]:
    """vectors.json: for each pre-trained source of a checkpoint, its record (name, fingerprint, words, dim)
    and where it comes from: the pinned pip package of a packaged source, or the absolute path of a file."""
    refs = {}
    for key in SOURCE_KEYS:
        recorded = (payload.get("vectors") or {}).get(key)
        if recorded is None:
            continue
        spec = payload["model_config"].get(key) or recorded["name"]
        if spec in PACKAGED:
            package = PACKAGED[spec]
            refs[key] = {**recorded, "spec": spec, "module": package.module, "package": pin(package.package)}
        else:
            refs[key] = {**recorded, "spec": spec, "path": str(Path(spec).resolve())}
    return refs


def project_pins() -> dict[str, str]:
    """{canonical name: "name==version"} of the project's requirements.txt, then constraints.txt (the pins
    `make install` installs); {} where the project is installed without them."""
    root = Path(deca.__file__).resolve().parents[1]
    pins: dict[str, str] = {}
    for name in ("constraints.txt", "requirements.txt"):  # requirements.txt wins
        path = root / name
        lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        for line in lines:
            match = re.match(r"\s*([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*==\s*([^\s;#]+)", line)
            if match:
                pins[canonical(match.group(1))] = f"{match.group(1)}=={match.group(3)}"
    return pins


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pin(name: str, pins: Mapping[str, str] | None = None) -> str:
    """`name==version` as the project pins it, else as installed here."""
    pins = project_pins() if pins is None else pins
    return pins.get(canonical(name)) or f"{name}=={metadata.version(name)}"


def pip_requirements(refs: Mapping[str, dict]) -> list[str]:
    """The model's pip requirements: what its code imports and its packaged vector sources, pinned."""
    pins = project_pins()
    return [pin(name, pins) for name in REQUIRED] + [ref["package"] for ref in refs.values() if "package" in ref]


def signature():
    """context, question[, id] -> id, answer, tokens; params max_answer_length (None: the model's) and batch_size."""
    from mqan.decode import SOURCES

    weights = Object([Property(source, "double") for source in SOURCES])
    token = Object([Property("token", "string"), Property("source", "string"), Property("weights", weights),
                    Property("probability", "double")])
    inputs = Schema([ColSpec("string", "context"), ColSpec("string", "question"),
                     ColSpec("string", "id", required=False)])
    outputs = Schema([ColSpec("string", "id"), ColSpec("string", "answer"), ColSpec(Array(token), "tokens")])
    params = ParamSchema([ParamSpec("max_answer_length", "long", None), ParamSpec("batch_size", "long", 64)])
    return ModelSignature(inputs, outputs, params)


def input_example(extra: Mapping[str, Any]) -> pd.DataFrame:
    """An example question of (up to three of) the tasks the model was trained on; SST's when none has one."""
    tasks = ((extra.get("params") or {}).get("train") or {}).get("tasks") or []
    chosen = [t for t in tasks if t in EXAMPLES][:3] or ["sst"]
    return pd.DataFrame([{"id": t, "context": EXAMPLES[t].context, "question": EXAMPLES[t].question}
                         for t in chosen])


# What a logged model runs, and only that (copied into its code/ folder): the config and text helpers, the
# model, and this package; never train/ (tests/infer/test_mlflow_model.py loads one where `import train` fails).
CODE_PACKAGES = ("deca", "mqan", "infer")


def code_paths() -> list[str]:
    """The folders of CODE_PACKAGES, for MLflow's code_paths."""
    return [str(Path(importlib.util.find_spec(name).origin).parent) for name in CODE_PACKAGES]


def log_model(checkpoint: str | Path, registered_name: str | None = None):
    """Log `checkpoint` as the pyfunc model `model` of the active MLflow run (registered as a new version of
    `registered_name` when given); returns MLflow's ModelInfo. A checkpoint without its vocabulary (format 2)
    is refused: the model must answer from its files alone."""
    from mqan.checkpoint import read_checkpoint

    checkpoint = Path(checkpoint)
    payload = read_checkpoint(checkpoint)
    if not payload.get("vocab_tokens"):
        raise DataError(checkpoint, "the checkpoint does not carry its vocabulary (written before format 3)",
                        fix="retrain, or load it and save it again with mqan.checkpoint.save_checkpoint")
    refs = vector_references(payload)
    extra = payload["extra"]
    with tempfile.TemporaryDirectory() as tmp:
        vectors = Path(tmp) / "vectors.json"
        vectors.write_text(json.dumps(refs, indent=2), encoding="utf-8")
        return mlflow.pyfunc.log_model(
            name=NAME, python_model=str(ENTRY), artifacts={"checkpoint": str(checkpoint), "vectors": str(vectors)},
            code_paths=code_paths(), signature=signature(), input_example=input_example(extra),
            pip_requirements=pip_requirements(refs), registered_model_name=registered_name, model_config=LOAD_OPTIONS,
            metadata={"deca": {"format": payload["format"], "iteration": extra.get("iteration"),
                               "vectors": {k: r["spec"] for k, r in refs.items()}}},
            tags={CHECKPOINT_TAG: file_sha256(checkpoint), "deca.iteration": str(extra.get("iteration"))})
