#!/usr/bin/env bash
# Table 2 in miniature (issue 25 item 1): the single-task variants S2S, +SAtt, +CAtt, +QPtr (= MQAN) on SST,
# MWSC, WOZ and QA-SRL from ../shared/corpora, the same recipe, iterations and seeds for every variant; then
# the table beside the paper's single-task columns (experiments/table2_report.py).
#
#   bash experiments/table2.sh                                  # the whole grid, 2 runs at a time (1 core each)
#   TASKS="schema sst" SEEDS="123 7" bash experiments/table2.sh   # a part of it
#   OVERLAY=infra/params/paper.yaml DEVICE=cuda PARALLEL=1 ITERS_SCALE=20 bash experiments/table2.sh   # on a GPU
#   # the same miniature grid on a GPU machine that has only PyTorch (python -m bench.gpu_pack --tasks woz.en,srl first):
#   PYTHONPATH=.gpu/site:. PY=python3 WORKDIR=.gpu/work SET=model.word_vectors=.gpu/glove DEVICE=cuda \
#     PARALLEL=16 TASKS="woz.en srl" bash experiments/table2.sh
#
# Finished runs (their curve.json) are skipped and stopped ones (Ctrl-C or SIGTERM save their state) continue
# where they stopped, so the grid can be stopped and continued. Each run is
# experiments/single_task.py (train/recipe.py in a plain loop; the README's GloVe recipe by default).
# Data: the experiments' workdir (bench/workdir.py; prepared here once, before the runs start).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-checkpoints/table2}
SEEDS=${SEEDS:-"123 7"}
TASKS=${TASKS:-"schema sst woz.en srl"}
VARIANTS=${VARIANTS:-"s2s satt catt qptr"}
PARALLEL=${PARALLEL:-2}
OVERLAY=${OVERLAY:-infra/params/glove.yaml}
DEVICE=${DEVICE:-cpu}
ITERS_SCALE=${ITERS_SCALE:-1}
PY=${PY:-.venv/bin/python}
WORKDIR=${WORKDIR:-checkpoints/readme-experiment}
SET=${SET:-}   # extra KEY=VALUE overrides for every run, space-separated
extra=""; for kv in $SET; do extra+=" --set $kv"; done
# Iterations per task: about where the GloVe recipe's MQAN peaked on this machine (docs/results/issue10.md:
# SST 800, WOZ 1800, MWSC 300, QA-SRL still rising at 3600), so every variant gets the budget MQAN needed.
declare -A ITERS=([sst]=1200 [schema]=400 [woz.en]=1800 [srl]=2400)
mkdir -p "$OUT"
for task in $TASKS; do
  [ -d "$WORKDIR/processed/$task/train" ] && continue
  "$PY" -c "from pathlib import Path; from bench.workdir import prepare; prepare(Path('$WORKDIR').resolve())"
  break
done
jobs=()
for seed in $SEEDS; do for task in $TASKS; do for variant in $VARIANTS; do
  run="$OUT/$task-$variant-s$seed"
  [ -f "$run/curve.json" ] && continue
  iters=$(( ${ITERS[$task]:-1000} * ITERS_SCALE ))
  jobs+=("$PY -m experiments.single_task run --task $task --iterations $iters --val-every $(( iters / 12 )) \
--overlay $OVERLAY --set model.variant=$variant --set train.seed=$seed$extra --device $DEVICE --workdir $WORKDIR \
--out $run >> $run.log 2>&1")
done; done; done
echo "[$(date -u +%T)] ${#jobs[@]} runs to do, $PARALLEL at a time | $(uptime | sed 's/.*load/load/')"
# a failed run is reported (its log says why) and the others go on; the table shows what finished
printf '%s\n' "${jobs[@]}" | xargs -P "$PARALLEL" -I{} bash -c \
  '{} && s=done || s="FAILED (see its .log)"; echo "[$(date -u +%T)] $s: {}" | cut -c1-200'
"$PY" -m experiments.table2_report "$OUT"
