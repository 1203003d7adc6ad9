"""One module per task (or family of tasks); each calls `deca.registry.register` at import.

Modules here are discovered automatically by `deca.registry.all_tasks()`; helpers shared by several
task modules live in modules whose names start with an underscore.
"""
