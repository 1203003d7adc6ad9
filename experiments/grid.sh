#!/usr/bin/env bash
# The issue-45 grid (item 5): every run docs/results/records/plan.json plans (`python -m experiments.plan runs`:
# Table 2's four variants x its seeds x its iterations per task, Table 3's three strategies x its seeds on the five
# tasks, and the single-task zero-shot models), PARALLEL at a time, the whole command within BUDGET_S seconds.
# The stage that follows the speed check of bench/gpu_check.sh on a lent GPU. Each run is experiments/single_task.py
# (Table 3's: infra/params/table3.yaml's recipe and strategy, its first phase 2/15 of the budget, on TABLE3_WORKDIR's
# data and vocabulary), which writes its best model's per-example validation record (examples.json.gz) at every new
# best. The runs share PARALLEL slots as a pool: a run starts as soon as one ends (an MWSC S2S run takes a fifth of
# a +SAtt one, so batches that wait for their slowest run leave slots idle). A run is time-boxed to what is left of
# the budget when it starts, less MARGIN_S, and a run cut there saves its state (SIGTERM) and continues on the next
# call (on the same machine: the state stays in GRID_OUT). No run starts with less than MIN_RUN_S + MARGIN_S left.
# Table 3's and the zero-shot models, once finished, are asked the renamed SST questions in their slot (`deca
# evaluate`, kept per example as zero_shot.json.gz with zero_shot_figures.json; a model finished but not yet asked
# is asked on the next call). As each run ends (and at the end) every finished run is copied to EXPORT (curve.json,
# examples.json.gz and the renamed answers: no model) with machine.json. Finished runs are skipped, those in GRID_OUT
# and Table 2's in its committed record at the plan's budget (`plan runs` leaves them out, so a fresh machine goes
# on where the last one stopped): run it again to go on; a run finished at fewer iterations than the plan now asks
# (a budget doubled where a curve still rose) is continued from its kept state. Table 2 runs at the plan's new
# budget wait in the record's `pending` (experiments/results/pending.py) until the plan's seeds are all in. A SIGTERM or SIGINT to the grid (`kill <pid>`, the pid its first line prints)
# stops its runs the same way (state saved, finished runs exported). DRY_RUN=1 lists each pending run's folder and
# command.
#
#   # on a GPU machine with PyTorch only; first here: python -m experiments.table3 prepare --workdir
#   # checkpoints/table3; deca prepare --tasks sst.happy_angry sst.supportive_unsupportive --splits validation
#   # --mirror ../shared/corpora --out checkpoints/readme-experiment/processed; python -m bench.gpu_pack --tasks
#   # sst,srl,woz.en,schema --table3-workdir checkpoints/table3; then carry .gpu:
#   PYTHONPATH=.gpu/site:. PY=python3 WORKDIR=.gpu/work TABLE3_WORKDIR=.gpu/table3 SET=model.word_vectors=.gpu/glove \
#     EXPORT=$OUT/grid COMMIT=<the commit sent> bash experiments/grid.sh
#   # back here, the runs into the records (one command per table), then the pages (and the plan, remade from
#   # the new per-example records):
#   .venv/bin/python -m experiments.results.runs table2 <files_at>/grid/{sst,srl,woz.en,schema}-* --machine h100 \
#     --machine-file <files_at>/grid/machine.json
#   .venv/bin/python -m experiments.results.runs table3 <files_at>/grid/table3-* --machine h100 \
#     --machine-file <files_at>/grid/machine.json
#   .venv/bin/python -m experiments.results.runs zero_shot <files_at>/grid/zero-shot-* <files_at>/grid/table3-* \
#     --machine h100 --machine-file <files_at>/grid/machine.json
#   .venv/bin/python -m experiments.plan && make results
#
# Rehearsed on the CPU (2 cores shared with other work, load average 9-17 throughout), tiny budgets, 2 at a time:
#   DEVICE=cpu PARALLEL=2 ITERS_SCALE=0.05 TABLES=table2 TASKS=schema LIMIT=4 BUDGET_S=480 \
#     GRID_OUT=/tmp/grid EXPORT=/tmp/grid-export bash experiments/grid.sh                        # 3 min 6 s
#   # Table 3 and zero-shot, with a tiny model (T="model.dimension=16 model.ff_hidden=16 model.heads=2
#   # model.transformer_layers=1 model.rnn_layers=1 model.embedding_dim=16 model.word_vectors=null
#   # model.max_generative_vocab=200 model.max_answer_length=8 train.token_budget=400 train.val_batch_size=64"),
#   # the workdirs prepared by a first call (squad_dev and the four tasks: 26 s):
#   export DEVICE=cpu PARALLEL=2 ITERS_SCALE=0.01 GRID_OUT=/tmp/grid EXPORT=/tmp/grid-export WORKDIR=/tmp/work \
#     TABLE3_WORKDIR=/tmp/t3work SET="$T train.max_val_examples=100" MARGIN_S=10 MIN_RUN_S=20 RENAMED_S=400
#   TABLES=table3 LIMIT=2 BUDGET_S=60 bash experiments/grid.sh   # 2 runs of 48 iterations, done in 44 s; 56 s
#   TABLES=table3 LIMIT=2 BUDGET_S=500 bash experiments/grid.sh  # 0 to do; both asked the renamed SST: 149 s
#   TABLES=zero_shot TASKS=sst LIMIT=2 BUDGET_S=500 bash experiments/grid.sh   # 2 SST runs + renamed: 303 s
#   TABLES="table3 zero_shot" TASKS="all sst" LIMIT=2 BUDGET_S=500 bash experiments/grid.sh   # 0 to do: 12 s
#   # a finished Table 3 model not yet asked (its renamed answers deleted), RENAMED_MAX=50, same exports: the
#   # next call (0 to do) asks both side by side and exports them: 185 s (load average 24)
#   # then the way back above (runs table3, runs zero_shot, python -m experiments.results): 21 s, every page
#   # made (the rehearsal's records not kept). With the full model and BUDGET_S=150 MARGIN_S=20, both Table 3
#   # runs were cut at iteration 7 (state saved; 60 s after SIGTERM the kill came as they ended: a CPU validation
#   # round outlasts the grace) and the next call continued them from iteration 7. Their export (the tiny
#   # model's): tests/fixtures/grid_export.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
# the commit the runs start from, named in every export's machine.json (HEAD at the end may be later)
COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}
export COMMIT
GRID_OUT=${GRID_OUT:-checkpoints/grid}
EXPORT=${EXPORT:-}
PARALLEL=${PARALLEL:-8}
BUDGET_S=${BUDGET_S:-630}   # 10.5 minutes: the command ends within the 11 a device call allows
MARGIN_S=${MARGIN_S:-60}    # kept back from a run's time box: a stopped run saves its state, the export copies
MIN_RUN_S=${MIN_RUN_S:-90}  # no run starts with less than this (+ MARGIN_S) left
RENAMED_S=${RENAMED_S:-120} # at most this for one model's renamed questions (a CPU under load needs more)
RENAMED_MAX=${RENAMED_MAX:-} # ask only the first N sentences of each (a rehearsal; default: all 872)
DEVICE=${DEVICE:-cuda}
ITERS_SCALE=${ITERS_SCALE:-1}
TABLES=${TABLES:-"table2 table3 zero_shot"}
TASKS=${TASKS:-}            # only these tasks (Table 2: sst srl woz.en schema; Table 3: all) or task lists (zero-shot: sst, sst,schema)
TABLE3_WORKDIR=${TABLE3_WORKDIR:-checkpoints/table3}  # the five tasks' data and vocabulary (experiments/table3.py prepare)
DRY_RUN=${DRY_RUN:-}        # 1: print each pending run's folder and command, and run nothing
LIMIT=${LIMIT:-}            # at most this many planned runs (a rehearsal)
ALL=${ALL:-}                # 1: Table 2's runs recorded at the planned budget too (a rehearsal, a rerun elsewhere)
OVERLAY=${OVERLAY:-infra/params/glove.yaml}
WORKDIR=${WORKDIR:-checkpoints/readme-experiment}
SET=${SET:-}
START=$SECONDS
left() { echo $((BUDGET_S - (SECONDS - START))); }
log() { echo "[$(date -u +%T) +$((SECONDS - START))s] $*"; }
declare -A STRATEGY=([fully_joint]=fully_joint [anti_curriculum]=custom [curriculum]=curriculum)  # -> train.strategy
TABLE3_TASKS=squad_dev,sst,srl,woz.en,schema

# the planned runs not yet finished: "table task variant seed iterations"
mapfile -t planned < <("$PY" -m experiments.plan runs ${ALL:+--all})
todo=()
for line in "${planned[@]}"; do
  read -r table task variant seed iters <<<"$line"
  [[ " $TABLES " == *" $table "* ]] || continue
  [ -n "$TASKS" ] && [[ " $TASKS " != *" $task "* ]] && continue
  todo+=("$line")
done
[ -n "$LIMIT" ] && todo=("${todo[@]:0:$LIMIT}")
name_of() {  # the run's folder name (Table 2's and Table 3's as in docs/results/records/table2.json, table3.json)
  local table=$1 task=$2 variant=$3 seed=$4
  case $table in
    table2) echo "$task-$variant-s$seed" ;;
    table3) echo "table3-$variant-s$seed" ;;
    *) echo "zero-shot-${task//,/-}-s$seed" ;;
  esac
}
scaled() { awk -v i="$1" -v s="$ITERS_SCALE" 'BEGIN { v = int(i * s); print (v < 2 ? 2 : v) }'; }
finished() {  # whether the run in folder $1 finished at $2 iterations or more (a run finished shorter, as when the
  # plan doubles a budget whose curve still rose, is pending: single_task.py continues it from its kept state)
  local got
  got=$(sed -n 's/^  "iterations": \([0-9]*\),\{0,1\}$/\1/p' "$1/curve.json" 2>/dev/null | head -n 1)
  [ -n "$got" ] && [ "$got" -ge "$2" ]
}
command_of() {  # CMD: the experiments/single_task.py command of one planned run, its iterations scaled
  local table=$1 task=$2 variant=$3 seed=$4 iters=$5 run=$6 n every
  n=$(scaled "$iters")
  if [ "$table" = table3 ]; then  # infra/params/table3.yaml's recipe: 8 validation rounds, the first phase 2/15
    every=$(( n / 8 > 0 ? n / 8 : 1 ))
    CMD=("$PY" -m experiments.single_task run --task "$TABLE3_TASKS" --iterations "$n" --val-every "$every"
         --overlay "$OVERLAY" --overlay infra/params/table3.yaml --set "train.strategy=${STRATEGY[$variant]}"
         --set "train.phase_iterations=$(( n * 2 / 15 > 0 ? n * 2 / 15 : 1 ))" --workdir "$TABLE3_WORKDIR")
  else
    every=$(( n / 12 > 0 ? n / 12 : 1 ))
    CMD=("$PY" -m experiments.single_task run --task "$task" --iterations "$n" --val-every "$every"
         --overlay "$OVERLAY" --workdir "$WORKDIR")
    [ "$variant" != mqan ] && CMD+=(--set "model.variant=$variant")
  fi
  CMD+=(--set "train.seed=$seed")
  for kv in $SET; do CMD+=(--set "$kv"); done
  CMD+=(--device "$DEVICE" --out "$run")
}
wants() { [[ " $TABLES " == *" $1 "* ]]; }
pending=()
for line in "${todo[@]}"; do
  read -r table task variant seed iters <<<"$line"
  finished "$GRID_OUT/$(name_of $table $task $variant $seed)" "$(scaled "$iters")" || pending+=("$line")
done
log "${#todo[@]} planned runs here, ${#pending[@]} to do, $PARALLEL at a time, ${BUDGET_S}s budget, pid $$ (stop: kill $$)" \
  "| $(uptime | sed 's/.*load/load/')"
if [ -n "$DRY_RUN" ]; then
  for line in "${pending[@]}"; do
    read -r table task variant seed iters <<<"$line"
    run="$GRID_OUT/$(name_of $table $task $variant $seed)"
    command_of $table $task $variant $seed $iters "$run"
    echo "${run##*/}: ${CMD[*]}"
  done
  exit 0
fi
mkdir -p "$GRID_OUT"
rm -f "$GRID_OUT"/*.timeout.pid  # left by a grid killed outright

"$PY" -c "from pathlib import Path; from bench.workdir import prepare; prepare(Path('$WORKDIR').resolve())" \
  || { log "FAILED to prepare $WORKDIR"; exit 1; }
if wants table3 && printf '%s\n' "${pending[@]}" | grep -q '^table3 '; then
  "$PY" -m experiments.table3 prepare --workdir "$TABLE3_WORKDIR" || { log "FAILED to prepare $TABLE3_WORKDIR"; exit 1; }
fi
if { wants zero_shot || wants table3; } && [ ! -d "$WORKDIR/processed/sst.happy_angry/validation" ]; then
  "$PY" -m deca.cli prepare --tasks sst.happy_angry sst.supportive_unsupportive --splits validation \
    --mirror "${DECA_SHARED_CORPORA:-../shared/corpora}" --out "$WORKDIR/processed" >/dev/null || log "renamed SST not prepared: zero-shot skipped"
fi

machine() {  # the machine and commit, for experiments/results/runs.py --machine-file
  "$PY" - "$1" <<'EOF'
import json, os, subprocess, sys
from bench.record import this_machine
found = this_machine()
try:
    import torch
    found["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
except ImportError:
    pass
found["commit"] = os.environ.get("COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                                             capture_output=True, text=True).stdout.strip() or None
open(sys.argv[1], "w").write(json.dumps(found, indent=1) + "\n")
EOF
}

renamed() {  # a finished model (zero-shot, Table 3) asked the renamed questions: zero_shot.json.gz per example,
  # zero_shot_figures.json (experiments/results/grid_runs.py); $2: the vocabulary it was trained with
  local run=$1 vocab=$2 limit
  limit=$(( $(left) < RENAMED_S ? $(left) : RENAMED_S ))
  [ -f "$run/zero_shot.json.gz" ] && return 0
  [ -d "$WORKDIR/processed/sst.happy_angry/validation" ] || return 0
  [ "$limit" -gt 10 ] || { log "no time left for the renamed questions (the next call asks them): ${run##*/}"; return 0; }
  timeout -s TERM "$limit" "$PY" -m deca.cli evaluate --checkpoint "$run/best/model.pt" --tasks sst sst.happy_angry \
    sst.supportive_unsupportive --split validation ${RENAMED_MAX:+--max-examples $RENAMED_MAX} --out "$run/renamed" --no-mlflow --no-progress \
    --contamination none --device "$DEVICE" --set data.processed_dir="$WORKDIR/processed" \
    --set data.vocab_path="$vocab" >>"$run.log" 2>&1 &&
  "$PY" -m experiments.results.grid_runs keep-renamed "$run" >>"$run.log" 2>&1 || log "renamed questions FAILED (see $run.log): ${run##*/}"
}
vocab_of() { if [ "$1" = table3 ]; then echo "$TABLE3_WORKDIR/vocab.txt"; else echo "$WORKDIR/vocab.txt"; fi; }

export_finished() {
  [ -n "$EXPORT" ] || return 0
  mkdir -p "$EXPORT"
  machine "$EXPORT/machine.json"
  for run in "$GRID_OUT"/*/; do
    run=${run%/}
    [ -f "$run/curve.json" ] || continue
    mkdir -p "$EXPORT/${run##*/}"
    cp "$run/curve.json" "$EXPORT/${run##*/}/"
    for f in examples.json.gz zero_shot.json.gz zero_shot_figures.json; do [ -f "$run/$f" ] && cp "$run/$f" "$EXPORT/${run##*/}/"; done
  done
}

busy() { jobs -pr | wc -l; }
on_signal() {  # SIGTERM/SIGINT to the grid: each run's `timeout` passes it on (the run saves its state, as at the
  trap - TERM INT
  # budget), the runs are waited for and the finished ones exported; the same command continues them. The runs are
  # found by their `timeout`'s pid file, so that a signal to every process of the grid (pkill -f grid.sh: its
  # run slots die at once) still reaches them
  local pids=() f pid
  for f in "$GRID_OUT"/*.timeout.pid; do [ -f "$f" ] && pids+=("$(cat "$f")"); done
  log "signal: stopping ${#pids[@]} runs (each saves its state; the same command continues them)"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  wait
  for pid in "${pids[@]}"; do while kill -0 "$pid" 2>/dev/null; do sleep 1; done; done
  export_finished
  exit 143
}
trap on_signal TERM INT
ask_all() {  # renamed for each "run:vocabulary" given, PARALLEL at a time
  for ask in "$@"; do
    while [ "$(jobs -pr | wc -l)" -ge "$PARALLEL" ]; do wait -n; done
    IFS=: read -r run vocab <<<"$ask"; renamed "$run" "$vocab" &
  done
  wait
}
asks=()
for line in "${todo[@]}"; do  # finished earlier, not yet asked the renamed questions (a call cut before)
  read -r table task variant seed iters <<<"$line"
  run="$GRID_OUT/$(name_of $table $task $variant $seed)"
  [ "$table" != table2 ] && finished "$run" "$(scaled "$iters")" && [ ! -f "$run/zero_shot.json.gz" ] &&
    asks+=("$run:$(vocab_of $table)")
done
ask_all "${asks[@]}"
run_one() {  # one planned run in its time box, then (Table 3's and zero-shot models) the renamed questions
  local table=$1 task=$2 variant=$3 seed=$4 iters=$5 limit=$6 run rc
  run="$GRID_OUT/$(name_of $table $task $variant $seed)"
  command_of $table $task $variant $seed $iters "$run"
  rm -f "$run/zero_shot.json.gz" "$run/zero_shot_figures.json"  # a model continued to a longer budget is asked again
  timeout -s TERM -k 60 "$limit" "${CMD[@]}" >>"$run.log" 2>&1 &
  echo $! >"$run.timeout.pid"
  wait $!
  rc=$?
  rm -f "$run.timeout.pid"
  case $rc in
    0) log "done: ${run##*/}" ;;
    3|124) if finished "$run" "$(scaled "$iters")"; then log "done: ${run##*/}"  # it ended as the budget did
           else log "stopped at the budget (state kept; run again to continue): ${run##*/}"; fi ;;
    137) log "killed 60s after the budget's SIGTERM (a validation round outlasted it; the state saved last, if any, is kept): ${run##*/}" ;;
    *) log "FAILED (exit $rc, see $run.log): ${run##*/}" ;;
  esac
  if [ "$table" != table2 ] && finished "$run" "$(scaled "$iters")"; then renamed "$run" "$(vocab_of $table)"; fi
}
i=0
while :; do
  if [ $i -lt ${#pending[@]} ] && [ "$(busy)" -lt "$PARALLEL" ]; then
    budget=$(( $(left) - MARGIN_S ))
    if [ $budget -ge "$MIN_RUN_S" ]; then
      read -r table task variant seed iters <<<"${pending[$i]}"
      i=$((i + 1))
      log "start $i of ${#pending[@]}: $(name_of $table $task $variant $seed), cut at ${budget}s"
      run_one $table $task $variant $seed $iters $budget &
      continue
    fi
    log "stopping: $(left)s left, a run needs $MIN_RUN_S + $MARGIN_S"
    not_started=$(( ${#pending[@]} - i )); i=${#pending[@]}
  fi
  [ "$(busy)" -eq 0 ] && break
  wait -n
  export_finished
done
export_finished
finished=$(ls "$GRID_OUT"/*/curve.json 2>/dev/null | wc -l)
log "end: $finished finished runs in $GRID_OUT, ${not_started:-0} not started${EXPORT:+; copied to $EXPORT}"
