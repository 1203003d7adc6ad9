"""docs/results/scale.md: Beam workers, metric processes, Ray Train workers and Ray Serve replicas, side by side,
from the records the benches write with `--record` (docs/results/records/scale/: prepare.json, metrics.json,
ray_scaling.json, ray_scaling_bf16.json, serve-N.json and serve_model.json; elastic.json, from the elastic
training test's `--elastic-record`). A record that is missing gives its section a line saying that it was not
rerun, and no figure."""
from __future__ import annotations

import statistics

from experiments.results import records
from experiments.results.render import num, table

PAGE = "docs/results/scale.md"
TEMPLATE = "scale.md"
FOLDER = "scale"
RAY_TARGET = 0.95  # issue 27: Ray with 2 bf16 workers against the best plain loop
WHAT = {"prepare": "`bench.prepare`", "metrics": "`bench.metrics`", "ray_scaling": "`bench.ray_scaling` (fp32)",
        "ray_scaling_bf16": "`bench.ray_scaling --precision bf16`", "serve-1": "`bench.serve`",
        "repro_jobs": "`bench.repro_jobs`",
        "elastic": "the elastic training test (`tests/train/test_elastic_ray.py --elastic-record`)"}
REPRO_TARGET = 1.5  # issue 46: `make run` after the install at least 1.5x faster than serial


def optional(name: str) -> dict | None:
    """The record docs/results/records/scale/<name>.json, or None when there is none."""
    try:
        return records.load(f"{FOLDER}/{name}")
    except records.RecordError:
        return None


def load_text(rec: dict) -> str:
    """'3.45 before, 4.03 after' (1-minute load averages), or 'not recorded'."""
    before, after = rec["load_before"], rec["load_after"]
    return f"{num(before[0], 2)} before, {num(after[0], 2)} after" if before and after else "not recorded"


def loaded(rec: dict) -> bool | None:
    """Whether the 1-minute load before or after the run was above the machine's cores (None: not recorded)."""
    before, after = rec["load_before"], rec["load_after"]
    if not (before and after):
        return None
    return max(before[0], after[0]) > rec["machine"]["cores"]


def header(rec: dict) -> str:
    """Date, commit, machine, load average (1 minute) before and after, and the command."""
    note = (" More runnable work than cores before or after the run: other work ran beside it, so a setting that "
            "needs every core competed with it." if loaded(rec) else "")
    return (f"- **Date:** {rec['date']} (commit `{rec['commit']}`).\n"
            f"- **Machine:** {records.describe_machine(rec['machine'])}; load average (1 minute) {load_text(rec)}."
            f"{note}\n"
            f"- **Command:** `.venv/bin/{rec['command']}`.")


def results_line(rec: dict, what: str) -> str:
    """The line before a run's figures: `what` where the run may give a headline; where its load was above the
    cores (or not recorded), that it gives none and the figures are what it measured."""
    state = loaded(rec)
    if state is False:
        return f"{what}:"
    why = "load not recorded" if state is None else \
        f"load above the cores ({load_text(rec)} on {rec['machine']['cores']} cores)"
    return f"No headline: {why}. What this run measured:"


def seconds(times: list[float], digits: int = 2) -> str:
    """Every repeat's seconds, in order."""
    return ", ".join(num(t, digits) for t in times)


def median_span(values: list[float], digits: int = 2) -> str:
    """'median (min-max)' ('value' alone for one)."""
    med = num(statistics.median(values), digits)
    return med if len(values) == 1 else f"{med} ({num(min(values), digits)}-{num(max(values), digits)})"


def prepare_figures(rec: dict) -> dict:
    """Median seconds per variant, examples/s ratios of the medians, whether every run of beam and beam-mp2 wrote
    the same Parquet files, and how much longer in-process Beam took than the plain loop with the same cache."""
    median = {v: statistics.median(r["seconds"] for r in runs) for v, runs in rec["runs"].items()}
    digests = {r["digest"] for v in ("beam", "beam-mp2") for r in rec["runs"].get(v, [])}
    compared = sum(len(rec["runs"].get(v, [])) for v in ("beam", "beam-mp2"))
    rate = {v: rec["runs"][v][0]["examples"] / t for v, t in median.items()}
    ratios = {f"{v}/plain": rate[v] / rate["plain"] for v in rate if "plain" in rate}
    if "beam-mp2" in rate and "plain-cached" in rate:
        ratios["beam-mp2/plain-cached"] = rate["beam-mp2"] / rate["plain-cached"]
    out = {"median": median, "rate": rate, "ratios": ratios, "identical": len(digests) == 1 and compared > 1,
           "compared": compared}
    if "beam" in median and "plain-cached" in median:
        out["beam_extra"] = median["beam"] - median["plain-cached"]
    return out


def prepare_table(rec: dict, found: dict) -> str:
    rows = []
    for variant, runs in rec["runs"].items():
        ratio = found["ratios"].get(f"{variant}/plain")
        examples = sorted({r["examples"] for r in runs})
        rows.append([variant, seconds([r["seconds"] for r in runs]), median_span([r["seconds"] for r in runs]),
                     ", ".join(f"{n:,}" for n in examples), f"{found['rate'][variant]:,.0f}",
                     f"{num(ratio, 2)}x" if ratio else "-", f"{max(r['rss_mb'] for r in runs):,.0f}",
                     ", ".join(sorted({r["digest"] for r in runs}))])
    return table(["variant", "job s, each run", "median s (min-max)", "examples", "examples/s (median)",
                  "vs plain (medians)", "peak RSS MiB (largest run)", "Parquet digest"], rows, "lrrrrrrl")


def prepare_section(rec: dict | None) -> str:
    """The prepare bench: header, table of every variant and the figures the issue asks about, from the medians of
    each variant's runs (no headline where the run was loaded)."""
    if rec is None:
        return not_rerun("prepare")
    found = prepare_figures(rec)
    r, med = found["ratios"], found["median"]
    jobs = ", ".join(f"{t} ({'/'.join(s)})" for t, s in rec["settings"]["jobs"].items())
    lines = [header(rec), f"- **Work:** parse → lowercase → revtok → Parquet, on the real {jobs}; "
             f"{rec['settings']['repeat']} runs of each variant, round-robin, each in a fresh process.", "",
             prepare_table(rec, found), "", results_line(rec, "Results (medians of the runs)"), ""]
    mp2 = [x["seconds"] for x in rec["runs"]["beam-mp2"]]
    lines.append(f"- `deca prepare` with 2 worker processes (beam-mp2): {num(r['beam-mp2/plain'], 2)}x the plain "
                 f"loop's examples/s (median {num(med['beam-mp2'], 2)} s vs {num(med['plain'], 2)} s; its runs "
                 f"{num(min(mp2), 2)}-{num(max(mp2), 2)} s). In-process Beam: {num(r['beam/plain'], 2)}x.")
    same = "identical" if found["identical"] else "not identical"
    lines.append(f"- The Parquet files (names and bytes) of 1 and 2 workers are {same} over the "
                 f"{found['compared']} runs of beam and beam-mp2.")
    lines.append(f"- Much of the gain is the per-shard tokenization cache (SQuAD repeats each paragraph for its "
                 f"questions). A plain loop with the same cache is {num(r['plain-cached/plain'], 2)}x, so 2 workers "
                 f"are {num(r['beam-mp2/plain-cached'], 2)}x of that.")
    lines.append(f"- In-process Beam takes {num(found['beam_extra'], 1)} s more than the plain loop with the same "
                 f"cache (medians), whose whole job takes {num(med['plain-cached'], 1)} s: Beam's fixed cost (the "
                 f"pipeline, the planning read) and its per-element overhead. dask2 starts its own cluster in the "
                 f"job; dask2-up uses one already running.")
    return "\n".join(lines)


def suite_table(done: list[dict]) -> str:
    return table(["set", "task", "examples", "headline", "value", "seconds, each repeat", "examples/s (median)"],
                 [[s["set"], s["task"], f"{s['examples']:,}", s["headline"], num(s["value"], 2),
                   seconds(s["seconds"], 3), f"{s['examples'] / statistics.median(s['seconds']):,.0f}"]
                  for s in done], "llrlrrr")


def rouge_lines(rouge: dict) -> list[str]:
    """ROUGE's scorers: each repeat, the medians and their ratios."""
    med = {label: statistics.median(t) for label, t in rouge["seconds"].items()}
    direct, one, two = med.values()
    rows = [[label, seconds(t), num(med[label], 2), f"{rouge['pairs'] / med[label]:,.0f}",
             f"{num(direct / med[label], 2)}x"] for label, t in rouge["seconds"].items()]
    return ["", f"ROUGE-1/2/L on {rouge['pairs']:,} (prediction, gold) pairs built from the 20 real CNN "
            f"stories ({rouge['words_per_pair']:.0f} words a pair):", "",
            table(["scorer", "seconds, each repeat", "median s", "pairs/s (median)", "vs direct (medians)"], rows), "",
            f"ROUGE with 2 processes runs at {num(one / two, 2)}x one process ({num(direct / two, 2)}x calling "
            f"rouge-score directly), from the medians; 1 and 2 processes gave "
            f"{'identical' if rouge['same_scores_1_and_2_processes'] else 'different'} scores."]


def metrics_section(rec: dict | None) -> str:
    """The metric suite per set and ROUGE with 1 and 2 processes, from the medians of the repeats (no headline
    where the run was loaded)."""
    if rec is None:
        return not_rerun("metrics")
    done = [s for s in rec["suite"] or [] if "seconds" in s]
    total_n = sum(s["examples"] for s in done)
    totals = [sum(f(s["seconds"]) for s in done) for f in (statistics.median, min, max)]
    lines = [header(rec), "", results_line(rec, "Results (medians of the repeats)"), "", suite_table(done), ""]
    lines.append(f"{total_n:,} real examples scored in {num(totals[0], 2)} s (the sum of each set's median time; "
                 f"of the fastest and of the slowest repeats {num(totals[1], 2)}-{num(totals[2], 2)} s).")
    if rec["rouge"]:
        lines += rouge_lines(rec["rouge"])
    return "\n".join(lines)


def ray_table(rec: dict) -> str:
    base = rec["results"]["plain loop, 1 thread"]["tokens_per_s"]
    rows = [[name, f"{r['tokens_per_s']:,.0f}", f"{num(r['tokens_per_s'] / base, 2)}x", num(r["wall_s"]),
             num(r["fixed_s"]) if name.startswith("ray") else "-"] for name, r in rec["results"].items()]
    return table(["setup", "tokens/s", "vs plain loop, 1 thread", "wall s", "fixed s"], rows)


def ray_setup(rec: dict) -> str:
    s = rec["settings"]
    return (f"- **Setup:** {', '.join(s['tasks'])} ({s['data']} data), d = {s['dimension']}, budget "
            f"{s['budget']:,}, {s['iterations']} iterations, {s['precision']}.")


def ray_said(rec: dict) -> str:
    """The line before a Ray run's figures: one run, no repeat; where loaded, no headline and not a measure of
    scaling."""
    state = loaded(rec)
    if state is False:
        return "Results (one run, no repeat):"
    why = "load not recorded" if state is None else \
        f"load above the cores during it ({load_text(rec)} on {rec['machine']['cores']} cores)"
    return (f"No headline: one run; {why}: not a measure of scaling (the bench records no load per setting). "
            "What it measured:")


def ray_section(fp32: dict | None, bf16: dict | None) -> str:
    """Ray Train against a plain loop, in fp32 and in bf16; a bold figure only from a run that was not loaded."""
    parts = []
    if fp32 is None:
        parts.append(not_rerun("ray_scaling"))
    else:
        r, fixed = fp32["ratios"], [v["fixed_s"] for k, v in fp32["results"].items() if k.startswith("ray")]
        parts += [header(fp32), ray_setup(fp32), "", ray_table(fp32), "", ray_said(fp32), "",
                  f"- Ray with 1 worker: {num(r['time_per_token_ray1_vs_plain1'], 2)}x a plain 1-thread loop's time "
                  f"per token, plus {num(min(fixed))}-{num(max(fixed))} s fixed per run (start-up, warm-up, teardown, "
                  f"final validation).",
                  f"- 2 workers: {num(r['ray2_vs_ray1'], 2)}x one worker. A plain loop gets "
                  f"{num(r['plain2_vs_plain1'], 2)}x from a second thread."]
    parts += ["", "In bf16 (issue 27):", ""]
    if bf16 is None:
        parts.append(not_rerun("ray_scaling_bf16"))
    else:
        r = bf16["ratios"]
        reach = f"{num(r['ray2_vs_best_plain'], 2)}x the best plain loop"
        parts += [header(bf16), ray_setup(bf16), "", ray_table(bf16), "", ray_said(bf16), "",
                  f"Ray with 2 workers reaches {reach if loaded(bf16) is not False else f'**{reach}**'} (issue 27's "
                  f"target was {num(RAY_TARGET, 2)}x). Each bf16 worker uses one thread: 2 workers give "
                  f"{num(r['ray2_vs_ray1'], 2)}x one worker, where the plain loop gives {num(r['plain2_vs_plain1'], 2)}x "
                  f"with 2 threads."]
    return "\n".join(parts)


def loss_chart(runs: dict[str, dict]) -> str:
    """The runs' per-step training losses as one Mermaid line chart (a line per run, in the table's order)."""
    steps = len(next(iter(runs.values()))["losses"])
    lines = ["```mermaid", "xychart-beta", '  title "Training loss per iteration"',
             f'  x-axis "iteration" [{", ".join(str(i) for i in range(1, steps + 1))}]', '  y-axis "train/loss"']
    lines += [f"  line [{', '.join(f'{v:.5f}' for v in run['losses'])}]" for run in runs.values()]
    return "\n".join([*lines, "```"])


def elastic_section(rec: dict | None) -> str:
    """Elastic training: the loss curves of 1, 2 and 2 -> 1 -> 2 workers, per step, and how far they differ."""
    if rec is None:
        return not_rerun("elastic")
    s, runs = rec["settings"], rec["runs"]
    names = list(runs)
    rows = [[str(i + 1), *[f"{runs[n]['losses'][i]:.6f} ({runs[n]['workers'][i]})" for n in names]]
            for i in range(len(runs[names[0]]["losses"]))]
    described = "; ".join(f"{n}: {run['what']}" for n, run in runs.items())
    walls = ", ".join(f"{n} {num(run['seconds'], 0)} s" for n, run in runs.items())
    lines = [header(rec),
             f"- **Setup:** {', '.join(s['tasks'])} (the test fixtures), d = {s['dimension']}, dropout "
             f"{num(s['dropout'], 1)}, global budget {s['token_budget']:,}, {s['iterations']} iterations, a checkpoint "
             f"every {s['save_every']}; {s['cluster']}.",
             f"- **Runs:** {described}.", "",
             loss_chart(runs), "",
             f"Lines in the order {', '.join(names)}: they lie on each other. Per iteration, training loss (workers "
             "that trained the step):", "",
             table(["iteration", *names], rows, "r" + "r" * len(names)), ""]
    for name, diff in rec["max_difference"].items():
        lines.append(f"- {name} against {names[0]}: largest loss difference {diff['loss']:.2g}, largest weight "
                     f"difference {diff['weight']:.2g} (float reduction order; the test's tolerance is "
                     f"{s['loss_rtol']:g} relative on each loss).")
    lines.append(f"- Wall time: {walls} (the elastic run waits for the node kill, the restart on one node, the new node and the resize).")
    return "\n".join(lines)


def serve_cell(res: list[dict], p50: bool) -> str:
    """Questions/s of each run ('a / b'), with the p50 latencies' range where asked."""
    rates = " / ".join(f"{r['questions_per_s']:.1f}" for r in res)
    if not p50:
        return rates
    lat = [r["p50_ms"] for r in res]
    return f"{rates} (p50 {lat[0]:.0f} ms)" if len(lat) == 1 else f"{rates} (p50 {min(lat):.0f}-{max(lat):.0f} ms)"


def serve_section(runs: list[dict], model: dict | None) -> str:
    """uvicorn against Ray Serve with 2 replicas over the serve records, run by run."""
    if not runs:
        return not_rerun("serve-1")
    lines = [header(r) for r in runs]
    lines.append(f"- **Setup:** POST /predict on loopback, on CPU; the questions are the example inputs of "
                 f"{', '.join(runs[0]['settings']['tasks'])}; max batch {runs[0]['settings']['max_batch']}, max wait "
                 f"{num(runs[0]['settings']['max_wait_ms'], 0)} ms; each scenario at most "
                 f"{runs[0]['settings']['calls']} calls or {num(runs[0]['settings']['seconds'], 0)} s.")
    lines.append(model_line(model))
    scenarios = [k for k in runs[0]["servers"]["uvicorn"] if k != "health"]
    n = f"{len(runs)} run{'s' if len(runs) > 1 else ''}"
    rows = [[s, serve_cell([r["servers"]["uvicorn"][s] for r in runs], i == 0),
             serve_cell([r["servers"]["ray_serve_2_replicas"][s] for r in runs], i == 0),
             spread([r["servers"]["ray_serve_2_replicas"][s]["questions_per_s"] / r["servers"]["uvicorn"][s]["questions_per_s"]
                     for r in runs])] for i, s in enumerate(scenarios)]
    lines += ["", f"{n}; each figure is questions/s (with p50 latency where given):", "",
              table(["load", f"uvicorn ({n})", f"Ray Serve, 2 replicas ({n})", "Ray / uvicorn"], rows, "llll"), ""]
    batching = [r["servers"]["uvicorn"]["health"]["batching"] for r in runs]
    questions = " / ".join(f"{b['rows']:,}" for b in batching)
    batches = " / ".join(str(b["batches"]) for b in batching)
    lines.append(f"- Over the whole run, uvicorn's batching queue put {questions} questions in {batches} model "
                 f"batches (the largest held {max(b['largest_batch'] for b in batching)}).")
    same = all(r["same_answers"] for r in runs)
    lines.append(f"- {'Both servers gave the same answers' if same else 'The servers gave different answers'} "
                 f"in {'every run' if len(runs) > 1 else 'the run'}.")
    return "\n".join(lines)


def repro_section(rec: dict | None) -> str:
    """`make run`'s pipeline: `dvc repro` against `deca repro --jobs N`, every round, median (min-max) of the ratios."""
    if rec is None:
        return not_rerun("repro_jobs")
    jobs, res = rec["settings"]["jobs"], rec["summary"]
    rows = [[str(k + 1), r["first"], num(r["serial"]["seconds"], 0), num(r["parallel"]["seconds"], 0),
             f"x{num(r['serial']['seconds'] / r['parallel']['seconds'], 2)}",
             f"{num(r['serial']['load_before'][0], 2)} / {num(r['parallel']['load_before'][0], 2)}"]
            for k, r in enumerate(rec["runs"])]
    met = all(x >= REPRO_TARGET for x in res["ratios"])
    return (f"{header(rec)}\n\nThe whole pipeline on the bundled miniature corpora from nothing (a fresh clone, no "
            f"DVC cache), serial (`deca repro --jobs 1`, which is `dvc repro`) and with `--jobs {jobs}`, both in every "
            "round, alternating which runs first.\n\n"
            + table(["round", "first", "serial s", f"--jobs {jobs} s", "serial / parallel", "load before (serial / parallel)"], rows)
            + f"\n\nMedian x{num(res['median'], 2)} ({num(res['min'], 2)}-{num(res['max'], 2)}) over "
            f"{len(res['ratios'])} round{'s' if len(res['ratios']) > 1 else ''}: issue 46's target, at least "
            f"x{REPRO_TARGET} in every round, is **{'met' if met else 'missed'}**.")


def spread(values: list[float]) -> str:
    """'a-bx' over runs ('ax' for one)."""
    return f"{num(min(values), 2)}x" if len(values) == 1 else f"{num(min(values), 2)}-{num(max(values), 2)}x"


def model_line(model: dict | None) -> str:
    """Which model was served: the serve_model record's training run, or that none is recorded."""
    if model is None:
        return "- **Model:** not recorded."
    return (f"- **Model:** {model['what']}, trained for this page on {model['date']} (commit `{model['commit']}`, "
            f"load average {num(model['load_before'][0], 2)} before): `.venv/bin/{model['command']}`, a "
            f"{num(model['minutes_budget'], 0)}-minute budget, {model['iterations']:,} iterations by its last "
            f"validation ({num(model['minutes'])} min). The model behind the figures this page quoted before was not kept.")


def not_rerun(name: str) -> str:
    return f"Not rerun: {WHAT.get(name, name)} has no record in docs/results/records/scale/ ({name}.json), so its figures are left out."


def serve_runs() -> list[dict]:
    """The serve records, serve-1.json, serve-2.json, ... in order."""
    found, k = [], 1
    while (rec := optional(f"serve-{k}")) is not None:
        found.append(rec)
        k += 1
    return found


def values() -> dict[str, str]:
    """The placeholders of templates/scale.md."""
    recs = {name: optional(name) for name in ("prepare", "metrics", "ray_scaling", "ray_scaling_bf16", "elastic",
                                              "repro_jobs")}
    serve = serve_runs()
    missing = [WHAT[name] for name, rec in recs.items() if rec is None] + ([WHAT["serve-1"]] if not serve else [])
    return {"prepare": prepare_section(recs["prepare"]), "metrics": metrics_section(recs["metrics"]),
            "ray": ray_section(recs["ray_scaling"], recs["ray_scaling_bf16"]), "elastic": elastic_section(recs["elastic"]),
            "serve": serve_section(serve, optional("serve_model")), "repro": repro_section(recs["repro_jobs"]),
            "not_rerun": (f"- **Not rerun:** {', '.join(missing)} (see {'their sections' if len(missing) > 1 else 'its section'}).\n"
                          if missing else "")}
