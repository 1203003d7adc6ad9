"""`deca predict`: ask a trained model your own questions.

Examples:
  deca predict --context "the movie was a delight ." --question "is this review negative or positive?"
  deca predict --input requests.jsonl --output answers.jsonl      # {"context", "question"[, "id"]} per line
  cat requests.jsonl | deca predict --input - --checkpoint model.pt
  deca predict --model models:/decanlp@champion --input requests.jsonl   # a registered model

The model is the latest run's best model under train.storage_dir, or --run DIR / --checkpoint FILE (which
carries its vocabulary) / --model models:/<name>/<version> or models:/<name>@<alias> (the Model Registry of
MLFLOW_TRACKING_URI, default sqlite:///mlflow.db here; `deca register`). Text is prepared as the model's
training data was (`deca prepare`, lowercased when the model was trained on lowercased text). Every
request is checked before the model loads: context and question must hold text, a context at most
--max-chars characters (default 20,000, as `deca serve`), a question a tenth of that; a bad line is named
with its field and the fix. Each output line is {"id", "answer", "tokens": [{"token", "source", "weights",
"probability"}]}: for every answer token, the source that gave most of its probability (vocabulary,
context or question), the three source weights (they sum to 1) and the token's probability.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from deca.checks import params_from_args
from deca.errors import ConfigError
from deca.io import check_writable, write_text
from deca.params_args import add_params_arguments
from deca.runs import add_model_arguments, resolve_checkpoint
from infer.limits import MAX_CONTEXT_CHARS, InputLimits
from mqan.allocator import keep_large_blocks


def configure(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    ask = parser.add_argument_group("what to ask (one question, or a JSON-lines file)")
    ask.add_argument("--context", help="the context text")
    ask.add_argument("--question", help="the question text")
    ask.add_argument("--input", metavar="FILE", help='JSON lines {"context", "question"[, "id"]}; - for stdin')
    parser.add_argument("--output", metavar="FILE", help="write the answers there (default: standard output)")
    parser.add_argument("--batch-size", type=int, default=64, metavar="N", help="requests per batch (default 64)")
    parser.add_argument("--max-answer-length", type=int, metavar="N", help="decoding steps (default: the model's)")
    parser.add_argument("--max-chars", type=int, default=MAX_CONTEXT_CHARS, metavar="N",
                        help=f"most characters of a context (default {MAX_CONTEXT_CHARS}; a question: a tenth of it)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: auto)")
    parser.add_argument("--precision", default="fp32", metavar="P",
                        help="fp32 (default), bf16 (autocast; fp32 on a CPU without bf16 units) or int8 (the "
                             "output projection quantized, CPU); answers may differ from fp32's")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_params_arguments(parser)


def requests(args: argparse.Namespace) -> list[dict]:
    """The requests to answer ({"id", "context", "question"}): the --context/--question pair, or every line of
    --input."""
    from infer.predict import read_requests, request_lines

    single = args.context is not None or args.question is not None
    if single == bool(args.input):
        raise ConfigError("give either --context and --question, or --input FILE (- for standard input)")
    limits = InputLimits.from_chars(args.max_chars)
    if single:
        if args.context is None or args.question is None:
            raise ConfigError("--context and --question go together")
        problems = limits.problems({"context": args.context, "question": args.question})
        if problems:
            raise ConfigError(f"--{problems[0][0]}: {problems[0][1]}")
        return [{"id": "0", "context": args.context, "question": args.question}]
    return read_requests(*request_lines(args.input), limits)


def run(args: argparse.Namespace) -> int:
    from infer.predict import check_answer_length, lowercase_of, pick_device, request_row
    from mqan.checkpoint import load_model
    from mqan.decode import decode
    from mqan.precision import DECODING, resolve

    for option in ("batch_size", "max_chars"):
        if getattr(args, option) < 1:
            raise ConfigError(f"--{option.replace('_', '-')} must be at least 1, got {getattr(args, option)}")
    check_answer_length(args.max_answer_length)
    device = pick_device(args.device)
    precision = resolve(args.precision, device, "--precision", DECODING)
    params = params_from_args(args)
    asked = requests(args)
    if args.output:  # before the model loads and decodes: a full disk or a read-only folder fails now
        check_writable(Path(args.output).resolve().parent)
    keep_large_blocks()
    if args.model:
        from infer.model_uri import model_checkpoint

        path = model_checkpoint(args.model)
    else:
        path, _ = resolve_checkpoint(args.run, args.checkpoint, params.train.storage_dir)
    model, vocab, extra = load_model(path, params.data.vocab_path, device)
    rows = [request_row(r["context"], r["question"], r["id"], lowercase_of(extra)) for r in asked]
    with tqdm(total=len(rows), desc="predict", unit="q", disable=args.no_progress or len(rows) == 1) as bar:
        answers = decode(model, vocab, rows, args.batch_size, args.max_answer_length, device, bar=bar, explain=True,
                         precision=precision)
    lines = "".join(json.dumps(a.to_json(r["id"]), ensure_ascii=False) + "\n" for r, a in zip(rows, answers))
    if args.output:
        write_text(args.output, lines)
        print(f"wrote {len(answers)} answer(s) to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(lines)
    return 0
