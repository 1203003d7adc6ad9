#!/usr/bin/env bash
# The README's issue-10 experiments on the real corpora (../shared/corpora), one after the other, each on
# 2 Ray CPU workers with the GloVe recipe (infra/params/glove.yaml). Reports land in
# checkpoints/readme-experiment/report-*.json and the MLflow store beside them (experiment "readme").
#   bash experiments/issue10_runs.sh            # about 90 minutes on a 2-core machine
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=disabled RAY_TRAIN_ENABLE_PREEMPTION_WATCHER=0 PYTHONHASHSEED=0
O=(--overlay infra/params/glove.yaml)
$PY -m experiments.experiment_sst single --task sst --minutes "${SST_MINUTES:-15}" "${O[@]}" --set train.val_every=100
$PY -m experiments.experiment_sst single --task srl --minutes "${SRL_MINUTES:-20}" "${O[@]}" --set train.val_every=200
# QA-SRL was still climbing: continue that run (same settings, same MLflow run) for 10 more minutes
SRL_RUN=$(ls -t checkpoints/readme-experiment/checkpoints | grep '^srl-single-' | head -1)
.venv/bin/deca train --resume "$SRL_RUN" --set train.storage_dir=checkpoints/readme-experiment/checkpoints \
    --set train.max_minutes=10 --no-progress
$PY -m experiments.experiment_sst single --task woz.en --minutes "${WOZ_MINUTES:-12}" "${O[@]}" --set train.val_every=200
$PY -m experiments.experiment_sst single --task schema --minutes "${MWSC_MINUTES:-5}" "${O[@]}" --set train.val_every=100
$PY -m experiments.experiment_multitask --joint-minutes "${JOINT_MINUTES:-25}" --single-tasks "${O[@]}" \
    --set train.val_every=250 --report report-glove-multitask.json
