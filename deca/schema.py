"""The one Parquet schema of processed examples, shared by every task, and how to read it back."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from deca.errors import DataError

EXAMPLE_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),  # stable, unique within (task, split)
        pa.field("task", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),  # train | validation | test
        pa.field("context", pa.string(), nullable=False),
        pa.field("question", pa.string(), nullable=False),
        pa.field("answer", pa.string(), nullable=False),
        pa.field("answers", pa.list_(pa.string()), nullable=False),
        pa.field("context_tokens", pa.list_(pa.string()), nullable=False),
        pa.field("question_tokens", pa.list_(pa.string()), nullable=False),
        pa.field("answer_tokens", pa.list_(pa.string()), nullable=False),
        pa.field("gold", pa.string(), nullable=True),  # JSON with what the metric needs beyond answers
    ]
)

DROPPED_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string()),
        pa.field("task", pa.string()),
        pa.field("split", pa.string()),
        pa.field("reason", pa.string()),
        pa.field("detail", pa.string()),
    ]
)

COLUMNS = tuple(EXAMPLE_SCHEMA.names)


def split_dir(processed_dir: str | Path, task: str, split: str) -> Path:
    """Directory holding the Parquet shards of one task split: <processed>/<task>/<split>/."""
    return Path(processed_dir) / task / split


def shards(processed_dir: str | Path, task: str, split: str) -> list[Path]:
    """The Parquet shards of one task split; a DataError names the directory and the fix when there are none."""
    path = split_dir(processed_dir, task, split)
    files = sorted(path.glob("*.parquet")) if path.is_dir() else []
    if not files:
        raise DataError(path, f"no processed Parquet shards for task {task!r} split {split!r}",
                        fix=f"run `deca prepare --tasks {task}` (or `dvc repro prepare@{task.replace('.', '_')}`), "
                            "or point data.processed_dir at the processed directory")
    return files


def bad_shard(path: str | Path, exc: BaseException):
    """The DataError of a processed Parquet shard that does not read (truncated or corrupt), with the fix."""
    path = Path(path)
    task = path.parent.parent.name
    first = " ".join(str(exc).split())[:160]
    return DataError(path, f"not a readable Parquet shard, truncated or corrupt ({type(exc).__name__}: {first})",
                     fix=f"rerun `deca prepare --tasks {task}` (or `dvc repro prepare@{task.replace('.', '_')}`)")


def shard_rows(path: str | Path) -> int:
    """The rows of one processed shard, read from its footer; `bad_shard`'s DataError when it does not read."""
    try:
        return pq.ParquetFile(path).metadata.num_rows
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise bad_shard(path, exc) from None


def read_split(processed_dir: str | Path, task: str, split: str, columns: list[str] | None = None) -> pa.Table:
    """Read every shard of one task split into a pyarrow Table (DataError when there is none)."""
    import pyarrow.dataset as ds

    files = [str(p) for p in shards(processed_dir, task, split)]
    return ds.dataset(files, format="parquet", schema=EXAMPLE_SCHEMA).to_table(columns=columns)


def iter_rows(processed_dir: str | Path, task: str, split: str, columns: list[str] | None = None,
              batch_size: int = 4096) -> Iterator[dict[str, Any]]:
    """Stream rows of one task split as dicts, shard by shard (bounded memory)."""
    for file in shards(processed_dir, task, split):
        for batch in pq.ParquetFile(file).iter_batches(batch_size=batch_size, columns=columns):
            yield from batch.to_pylist()
