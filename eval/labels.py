"""Display labels shared by the tables and charts of eval/ (`deca compare`'s Table 3, the report's Figure 3)."""
from __future__ import annotations

# The decaNLP tasks as the paper's tables name them; other tasks are shown by their registry name.
TASK_LABELS = {"squad": "SQuAD", "iwslt.en.de": "IWSLT", "cnn_dailymail": "CNN/DM", "multinli.in.out": "MNLI",
               "sst": "SST", "srl": "QA-SRL", "zre": "QA-ZRE", "woz.en": "WOZ", "wikisql": "WikiSQL",
               "schema": "MWSC"}
