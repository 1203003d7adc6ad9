#!/usr/bin/env bash
# The issue-45 grid (item 5): every run docs/results/records/plan.json plans (`python -m experiments.plan runs`:
# Table 2's four variants x its seeds x its iterations per task, and the single-task zero-shot models), PARALLEL
# at a time, in batches, the whole command within BUDGET_S seconds. The stage that follows the speed check of
# bench/gpu_check.sh on a lent GPU. Each run is experiments/single_task.py, which writes its best model's
# per-example validation record (examples.json.gz) at every new best; a batch's runs are time-boxed to what is
# left of the budget, less MARGIN_S, and a run cut there saves its state (SIGTERM) and continues on the next call
# (on the same machine: the state stays in GRID_OUT). No batch starts with less than MIN_RUN_S left. After each
# batch every finished run is copied to EXPORT (curve.json, examples.json.gz: no model) with machine.json, so the
# records are out before the next batch starts. Zero-shot models are then asked the renamed SST questions
# (`deca evaluate`, kept per example as zero_shot.json.gz). Finished runs are skipped: run it again to go on.
#
#   # on a GPU machine with PyTorch only (python -m bench.gpu_pack first, carry .gpu):
#   PYTHONPATH=.gpu/site:. PY=python3 WORKDIR=.gpu/work SET=model.word_vectors=.gpu/glove EXPORT=$OUT/grid \
#     COMMIT=<the commit sent> bash experiments/grid.sh
#   # back here, the runs into the records, then the pages (the plan is remade from the new per-example records):
#   .venv/bin/python -m experiments.results.runs table2 <files_at>/grid/schema-* ... --machine h100 \
#     --machine-file <files_at>/grid/machine.json && make results
#   # rehearsal on the CPU (tiny budget, 2 at a time, one task):
#   DEVICE=cpu PARALLEL=2 ITERS_SCALE=0.05 TABLES=table2 TASKS=schema LIMIT=4 BUDGET_S=300 \
#     GRID_OUT=/tmp/grid EXPORT=/tmp/grid-export bash experiments/grid.sh
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
GRID_OUT=${GRID_OUT:-checkpoints/grid}
EXPORT=${EXPORT:-}
PARALLEL=${PARALLEL:-8}
BUDGET_S=${BUDGET_S:-630}   # 10.5 minutes: the command ends within the 11 a device call allows
MARGIN_S=${MARGIN_S:-60}    # kept back from a batch: a stopped run saves its state, the export copies
MIN_RUN_S=${MIN_RUN_S:-90}  # no batch starts with less than this left
DEVICE=${DEVICE:-cuda}
ITERS_SCALE=${ITERS_SCALE:-1}
TABLES=${TABLES:-"table2 zero_shot"}
TASKS=${TASKS:-}            # only these tasks (Table 2) or task lists (zero-shot: sst, sst,schema)
LIMIT=${LIMIT:-}            # at most this many planned runs (a rehearsal)
OVERLAY=${OVERLAY:-infra/params/glove.yaml}
WORKDIR=${WORKDIR:-checkpoints/readme-experiment}
SET=${SET:-}
START=$SECONDS
left() { echo $((BUDGET_S - (SECONDS - START))); }
log() { echo "[$(date -u +%T) +$((SECONDS - START))s] $*"; }
extra=""; for kv in $SET; do extra+=" --set $kv"; done
mkdir -p "$GRID_OUT"

# the planned runs not yet finished: "table task variant seed iterations"
mapfile -t planned < <("$PY" -m experiments.plan runs)
todo=()
for line in "${planned[@]}"; do
  read -r table task variant seed iters <<<"$line"
  [[ " $TABLES " == *" $table "* ]] || continue
  [ -n "$TASKS" ] && [[ " $TASKS " != *" $task "* ]] && continue
  todo+=("$line")
done
[ -n "$LIMIT" ] && todo=("${todo[@]:0:$LIMIT}")
name_of() {  # the run's folder name (Table 2's as in docs/results/records/table2.json)
  local table=$1 task=$2 variant=$3 seed=$4
  if [ "$table" = table2 ]; then echo "$task-$variant-s$seed"; else echo "zero-shot-${task//,/-}-s$seed"; fi
}
pending=()
for line in "${todo[@]}"; do
  read -r table task variant seed iters <<<"$line"
  [ -f "$GRID_OUT/$(name_of $table $task $variant $seed)/curve.json" ] || pending+=("$line")
done
log "${#todo[@]} planned runs here, ${#pending[@]} to do, $PARALLEL at a time, ${BUDGET_S}s budget | $(uptime | sed 's/.*load/load/')"

"$PY" -c "from pathlib import Path; from bench.workdir import prepare; prepare(Path('$WORKDIR').resolve())" \
  || { log "FAILED to prepare $WORKDIR"; exit 1; }
if [[ " $TABLES " == *" zero_shot "* ]] && [ ! -d "$WORKDIR/processed/sst.happy_angry/validation" ]; then
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

renamed() {  # a finished zero-shot model asked the renamed questions, kept per example
  local run=$1
  [ -f "$run/zero_shot.json.gz" ] || [ ! -d "$WORKDIR/processed/sst.happy_angry/validation" ] && return 0
  timeout -s TERM 120 "$PY" -m deca.cli evaluate --checkpoint "$run/best/model.pt" --tasks sst sst.happy_angry \
    sst.supportive_unsupportive --split validation --out "$run/renamed" --no-mlflow --no-progress \
    --contamination none --device "$DEVICE" --set data.processed_dir="$WORKDIR/processed" \
    --set data.vocab_path="$WORKDIR/vocab.txt" >>"$run.log" 2>&1 &&
  "$PY" -c "import sys; from pathlib import Path; from experiments.results import examples as e; r = Path(sys.argv[1]);
e.write(r / 'zero_shot.json.gz', e.from_evaluation(r.name, r / 'renamed/metrics.json', r / 'renamed/predictions'))" "$run"
}

export_finished() {
  [ -n "$EXPORT" ] || return 0
  mkdir -p "$EXPORT"
  machine "$EXPORT/machine.json"
  for run in "$GRID_OUT"/*/; do
    run=${run%/}
    [ -f "$run/curve.json" ] || continue
    mkdir -p "$EXPORT/${run##*/}"
    cp "$run/curve.json" "$EXPORT/${run##*/}/"
    for f in examples.json.gz zero_shot.json.gz; do [ -f "$run/$f" ] && cp "$run/$f" "$EXPORT/${run##*/}/"; done
  done
}

i=0
while [ $i -lt ${#pending[@]} ]; do
  budget=$(( $(left) - MARGIN_S ))
  if [ $budget -lt "$MIN_RUN_S" ]; then log "stopping: $(left)s left, a batch needs $MIN_RUN_S + $MARGIN_S"; break; fi
  batch=("${pending[@]:$i:$PARALLEL}")
  log "batch of ${#batch[@]} (runs $((i + 1))-$((i + ${#batch[@]})) of ${#pending[@]}), each cut at ${budget}s"
  pids=()
  for line in "${batch[@]}"; do
    read -r table task variant seed iters <<<"$line"
    run="$GRID_OUT/$(name_of $table $task $variant $seed)"
    n=$(awk -v i="$iters" -v s="$ITERS_SCALE" 'BEGIN { v = int(i * s); print (v < 2 ? 2 : v) }')
    every=$(( n / 12 > 0 ? n / 12 : 1 ))
    set_variant=""; [ "$variant" != mqan ] && set_variant="--set model.variant=$variant"
    timeout -s TERM -k 60 "$budget" "$PY" -m experiments.single_task run --task "$task" --iterations "$n" \
      --val-every "$every" --overlay "$OVERLAY" $set_variant --set train.seed="$seed" $extra --device "$DEVICE" \
      --workdir "$WORKDIR" --out "$run" >>"$run.log" 2>&1 &
    pids+=("$!:$run:$table")
  done
  for entry in "${pids[@]}"; do
    IFS=: read -r pid run table <<<"$entry"
    wait "$pid"; rc=$?
    case $rc in
      0) [ "$table" = zero_shot ] && renamed "$run"; log "done: ${run##*/}" ;;
      3|124) log "stopped at the budget (state kept; run again to continue): ${run##*/}" ;;
      *) log "FAILED (exit $rc, see $run.log): ${run##*/}" ;;
    esac
  done
  export_finished
  i=$((i + ${#batch[@]}))
done
finished=$(ls "$GRID_OUT"/*/curve.json 2>/dev/null | wc -l)
log "end: $finished finished runs in $GRID_OUT, $(( ${#pending[@]} - i > 0 ? ${#pending[@]} - i : 0 )) not started${EXPORT:+; copied to $EXPORT}"
