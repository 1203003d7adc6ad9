"""The results pages as generated artefacts (issue 33 item 4).

Every figure on a generated page of docs/results, and the README's results section, comes from a committed
record under docs/results/records/ (or a committed JSON beside the pages) and is written by one command:

    make results                         # = python -m experiments.results
    python -m experiments.results --check   # exit 1 and name each page that differs from its records

Design (table-driven): a page is a template (experiments/results/templates/<page>.md) whose ``{{name}}``
placeholders are filled by that page's module (`values(records) -> {name: text}`); `pages.PAGES` lists
them. Verdicts come from eval/verdict.py's one `verdict()`; intervals from eval/stats.py.
"""
