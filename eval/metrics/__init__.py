"""The decaNLP metric families, one module each, and the registry that names them.

Every function here takes predictions and golds that are already lowercased (the caller,
`eval.api.score_task`, lowercases predictions as decaNLP does) and returns values on the 0..100 scale.
"""

# Importing the package registers the families, so that `eval.metrics.registry`, however it is imported,
# holds every metric (Python runs this file before any module of the package).
from eval.metrics import families  # noqa: F401
