"""`deca serve`: a trained model as an HTTP service (JSON API and a demo page).

Examples:
  deca serve                                   # the latest run's best model, on http://127.0.0.1:8000
  deca serve --checkpoint model.pt --port 0    # any free port; the URL is printed
  deca serve --run checkpoints/<run> --ray --replicas 2     # the same app on Ray Serve, two replicas
  deca serve --model models:/decanlp@champion  # a registered model (`deca register`)
  deca serve --model models:/decanlp@champion --follow 10   # and follow the alias (checked every 10 s)
  DECA_WEBHOOK_SECRET=... deca serve --model models:/decanlp@champion --follow 300 --webhook http://10.0.0.5:8000
  curl -s localhost:8000/predict -d '{"context": "a fine film .", "question": "Is this review negative or positive?"}'

Routes: POST /predict takes one {"context", "question"[, "id"]} or a JSON array of them and answers what
`deca predict` writes for each (the answer, and per token its source, the three source weights and its
probability); GET /health; GET /tasks (an example input for each registered task); GET / is the demo
page, where the answer's tokens are coloured by source as in the paper's Figure 1. The model is loaded
once; concurrent calls are coalesced into model batches of at most --max-batch rows and --batch-tokens
padded tokens (rows x the longest row's context + question tokens), waiting at most --max-wait-ms for a
batch to fill; the rows of waiting calls are taken in turn, and the batches being decoded take turns of
--slice-ms, so a large call is decoded in pieces and small calls keep being answered meanwhile.
Calls over the limits (--max-requests per call, --max-chars per context: the same limit as `deca
predict`) are refused with a 4xx status and a message naming the field. It listens on 127.0.0.1 only,
unless --host says otherwise.

SIGTERM drains it: new calls are refused (503 with Retry-After), the calls in flight are answered if they
finish within --grace-s seconds, the rest get 503 with Retry-After, then it exits with status 0 (with --ray
too). Ctrl-C ends it with status 130 (with --ray at once, without a drain).

--follow [SECONDS] (with --model models:/NAME@ALIAS, without --ray) re-reads the alias every SECONDS (default
30): when it moves, the new version is loaded beside the old one and swapped in between calls; a version that
fails to load leaves the old one serving, with one line on stderr. The X-Model header of each answer names the
version that gave it (infer/serve/follow.py). --webhook URL (this server's address as the MLflow server reaches
it) also has the tracking server push each alias move to URL/hooks/mlflow, signed with $DECA_WEBHOOK_SECRET, so
the new version is loaded at once; polling stays as the safety net (the tracking server's settings: infra/README.md,
"Serving"; infer/serve/webhook.py).
"""
from __future__ import annotations

import argparse
import functools
import math
import os
import signal
import sys
import time

from deca.checks import params_from_args
from deca.errors import ConfigError
from deca.params_args import add_params_arguments
from deca.runs import MODEL_URI, add_model_arguments, resolve_checkpoint
from infer.limits import MAX_CONTEXT_CHARS, InputLimits
from infer.serve.engine import BATCH_TOKENS, SLICE_MS, Predictor
from infer.serve.schema import Limits
from infer.serve.webhook import AliasHook, Registration, add_hook_route, webhook_options
from mqan.allocator import keep_large_blocks

GRACE_S = 30.0  # infer.serve.app.GRACE_S, without importing FastAPI for --help
FOLLOW_S = 30.0  # infer.serve.follow.DEFAULT_INTERVAL_S, without importing MLflow for --help

LOOPBACK = ("127.0.0.1", "localhost", "::1")
# The model's torch threads: all cores but one. On 2 cores, a model on both stalls at every parallel region
# whenever the event loop or another process takes a core (an LSTM over a 4,000-token row has thousands).
DEFAULT_THREADS = max(1, (os.cpu_count() or 1) - 1)


def configure(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--vocab", metavar="FILE", help="the vocabulary of a format-2 checkpoint (default: "
                        "data.vocab_path; newer checkpoints carry theirs)")
    net = parser.add_argument_group("where to listen")
    net.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    net.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 = any free port, without --ray)")
    net.add_argument("--grace-s", type=float, default=GRACE_S, metavar="S",
                     help=f"on SIGTERM, how long the calls in flight get to finish before they are answered 503 "
                          f"with Retry-After (default {GRACE_S:g}); then it exits with status 0")
    model = parser.add_argument_group("model and batching")
    model.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: auto)")
    model.add_argument("--precision", default="fp32", metavar="P",
                       help="fp32 (default), bf16 (autocast; fp32 on a CPU without bf16 units) or int8 (the output "
                            "projection quantized, CPU); answers may differ from fp32's")
    model.add_argument("--max-batch", type=int, default=32, metavar="N",
                       help="most rows in one model batch (default 32)")
    model.add_argument("--max-wait-ms", type=float, default=5.0, metavar="MS",
                       help="how long a batch waits for more rows before it runs (default 5)")
    model.add_argument("--batch-tokens", type=int, default=BATCH_TOKENS, metavar="N",
                       help=f"most work of one model batch: rows x the longest row's context + question tokens "
                            f"(default {BATCH_TOKENS}; a longer request runs alone)")
    model.add_argument("--threads", type=int, default=DEFAULT_THREADS, metavar="N",
                       help=f"torch threads of the model without --ray (default {DEFAULT_THREADS}: the CPU cores but "
                            "one, which is left to HTTP and tokenizing; a Ray replica uses the CPUs Ray gives it)")
    model.add_argument("--slice-ms", type=float, default=SLICE_MS, metavar="MS",
                       help=f"how long one batch is decoded before other calls' batches get a turn (default "
                            f"{SLICE_MS:g}; a batch's encoder is not interrupted)")
    model.add_argument("--max-answer-length", type=int, metavar="N", help="decoding steps (default: the model's)")
    limits = parser.add_argument_group("request limits")
    limits.add_argument("--max-requests", type=int, default=64, metavar="N",
                        help="most requests in one POST /predict (default 64)")
    limits.add_argument("--max-chars", type=int, default=MAX_CONTEXT_CHARS, metavar="N",
                        help=f"most characters of a context (default {MAX_CONTEXT_CHARS}; a question: a tenth of it)")
    model.add_argument("--follow", type=float, nargs="?", const=FOLLOW_S, metavar="SECONDS",
                       help=f"with --model models:/NAME@ALIAS: re-read the alias every SECONDS (default "
                            f"{FOLLOW_S:g}) and serve the version it moves to, swapped in between calls")
    model.add_argument("--webhook", metavar="URL",
                       help="with --follow: have the MLflow tracking server push alias moves to this server at URL "
                            "(its address as the MLflow server reaches it, e.g. http://10.0.0.5:8000; the hook is "
                            "URL/hooks/mlflow), signed with the secret in $DECA_WEBHOOK_SECRET; the alias is still "
                            "polled every --follow SECONDS")
    ray = parser.add_argument_group("Ray Serve")
    ray.add_argument("--ray", action="store_true", help="deploy on Ray Serve (a local Ray instance, or RAY_ADDRESS)")
    ray.add_argument("--replicas", type=int, metavar="N", help="model replicas with --ray (default 2)")
    add_params_arguments(parser)


def check(args: argparse.Namespace):
    """The request limits of `args`, after refusing inconsistent options (ConfigError)."""
    from infer.predict import check_answer_length, pick_device

    for name in ("max_batch", "max_requests", "max_chars", "batch_tokens", "threads"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    for name, default in (("slice_ms", SLICE_MS), ("max_wait_ms", 5.0), ("grace_s", GRACE_S)):
        option, value = f"--{name.replace('_', '-')}", getattr(args, name)
        if not math.isfinite(value):
            raise ConfigError(f"{option} must be a finite number, got {value:g} (e.g. {option} {default:g})")
        if value < 0:
            raise ConfigError(f"{option} must be at least 0, got {value:g}")
    if args.replicas is not None and not args.ray:
        raise ConfigError("--replicas goes with --ray (without it, one process serves)")
    if args.ray and (args.replicas or 2) < 1:
        raise ConfigError(f"--replicas must be at least 1, got {args.replicas}")
    if args.ray and args.port == 0:
        raise ConfigError("--port 0 is not supported with --ray; give a free port, e.g. --port 8000")
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be 0..65535, got {args.port}")
    check_answer_length(args.max_answer_length)
    if args.follow is not None:
        # mlflow (through infer.model_uri) is loaded only when following
        from infer.serve.follow import check_follow

        check_follow(args.model, args.follow, args.ray)
    webhook_options(args.webhook, args.follow)
    from mqan.precision import DECODING, check as check_precision

    pick_device(args.device)
    check_precision(args.precision, "--precision", DECODING)
    text = InputLimits.from_chars(args.max_chars)
    return Limits(max_requests=args.max_requests, max_context_chars=text.max_context_chars,
                  max_question_chars=text.max_question_chars)


def run(args: argparse.Namespace) -> int:
    limits = check(args)
    params = params_from_args(args)
    version = store = None
    if args.model:
        from infer.model_uri import registered_checkpoint, registry_uri

        store = registry_uri()
        path, version = registered_checkpoint(args.model, store)
    else:
        path, _ = resolve_checkpoint(args.run, args.checkpoint, params.train.storage_dir)
    vocab = args.vocab or params.data.vocab_path
    if args.host not in LOOPBACK:
        print(f"warning: listening on {args.host}: anyone who can reach this machine can use the model",
              file=sys.stderr)
    if args.ray:
        return run_ray(args, str(path), vocab, limits)
    return run_local(args, str(path), vocab, limits, (store, version))


def run_local(args: argparse.Namespace, path: str, vocab: str, limits, registered=(None, None)) -> int:
    """Load the model, bind the port, serve with uvicorn until interrupted; `registered` is (the registry's URI,
    the version) of a --model."""
    import torch

    from infer.serve.app import LocalBackend, bind, create_app, serve_local

    keep_large_blocks()
    torch.set_num_threads(args.threads)
    load = functools.partial(Predictor.load, vocab_path=vocab, device=args.device,
                             max_answer_length=args.max_answer_length, precision=args.precision)
    predictor = load(path)
    store, version = registered
    name = MODEL_URI.fullmatch(args.model)["name"] if args.model else None
    backend = LocalBackend(predictor, args.max_batch, args.max_wait_ms, args.batch_tokens, args.slice_ms,
                           version, name)
    app = create_app(backend, limits)
    if args.follow is not None:
        follow(backend, app, args, store, load)
    sock = bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    print(announce(host, port, path, predictor.device), file=sys.stderr, flush=True)
    serve_local(app, sock, "debug" if args.verbose else "warning", args.grace_s)
    return 0


def follow(backend, app, args: argparse.Namespace, store: str, load) -> None:
    """An AliasFollower of --model swapping new versions into `backend` while `app` runs; with --webhook, the
    route the tracking server pushes alias moves to, and the webhook registered there meanwhile."""
    from infer.serve.follow import AliasFollower, log

    match = MODEL_URI.fullmatch(args.model)
    follower = AliasFollower(match["name"], match["alias"], store, backend.current.version, load, backend.swap,
                             args.follow)
    backend.on_open.append(follower.start)
    backend.on_close.append(follower.stop)
    secret = webhook_options(args.webhook, args.follow)
    if secret is not None:
        add_hook_route(app, AliasHook(match["name"], match["alias"], secret, follower.wake, log))
        registration = Registration(store, args.webhook, secret, args.follow, log)
        backend.on_open.append(registration.start)
        backend.on_close.append(registration.stop)


def run_ray(args: argparse.Namespace, path: str, vocab: str, limits) -> int:
    """Deploy on Ray Serve and wait for SIGTERM, then drain (infer/serve/ray_app.py); Serve and Ray are shut
    down on the way out, also on Ctrl-C (130, without a drain)."""
    from infer.serve.ray_app import ServeConfig, drain_ray, start_ray, stop_ray

    config = ServeConfig(path, vocab, args.device, args.max_batch, args.max_wait_ms, args.max_answer_length, limits,
                         args.batch_tokens, args.precision, args.slice_ms, args.grace_s)
    replicas = args.replicas or 2
    try:
        start_ray(config, replicas, args.host, args.port)
        try:
            signal.signal(signal.SIGTERM, _terminate)  # after ray.init, which installs its own handler
            print(announce(args.host, args.port, path, f"Ray Serve, {replicas} replica(s)"), file=sys.stderr,
                  flush=True)
            while True:
                time.sleep(3600)
        except Terminated:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM does not cut the drain short
            if not drain_ray(replicas, args.grace_s):
                print("deca serve: some calls were still open after the drain; their connections are closed",
                      file=sys.stderr)
        return 0
    finally:
        stop_ray()


class Terminated(Exception):
    """SIGTERM reached `deca serve --ray`."""


def _terminate(signum, _frame) -> None:
    raise Terminated


def announce(host: str, port: int, path: str, where) -> str:
    """The line saying where the service is (tests and scripts read the URL from it)."""
    shown = f"[{host}]" if ":" in host else host
    return f"deca serve: http://{shown}:{port} ({path} on {where}; POST /predict, GET /health, GET /tasks, demo page at /)"
