"""The decaNLP metric families, one module each, and the registry that names them.

Every function here takes predictions and golds that are already lowercased (the caller,
`eval.api.score_task`, lowercases predictions as decaNLP does) and returns values on the 0..100 scale.
"""
