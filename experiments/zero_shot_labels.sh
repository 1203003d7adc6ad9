#!/usr/bin/env bash
# Zero-shot with renamed labels (paper Section 4.3, issue 13): an SST-trained model asked the SST
# question with positive/negative renamed happy/angry and supportive/unsupportive, next to the original.
# Needs the single-task SST run of experiments/issue10_runs.sh (its best model and vocabulary).
set -euo pipefail
W=${W:-checkpoints/readme-experiment}
RUN=${RUN:-$(ls -d "$W"/checkpoints/sst-single-* | tail -1)}
deca prepare --tasks sst.happy_angry sst.supportive_unsupportive --mirror ../shared/corpora --out "$W/processed"
deca evaluate --checkpoint "$RUN/best/model.pt" --tasks sst sst.happy_angry sst.supportive_unsupportive \
  --split validation --out "$W/zero-shot/validation" --no-mlflow \
  --set data.processed_dir="$W/processed" --set data.vocab_path="$W/vocab.txt"
