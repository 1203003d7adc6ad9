"""Infrastructure for running the pipeline at scale (see infra/README.md)."""
