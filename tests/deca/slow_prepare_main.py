"""`deca prepare` of a task whose reader is slow, for the Ctrl-C test (run as a script in a subprocess)."""
import sys
import time
from pathlib import Path

from deca import registry
from deca.cli import main
from deca.registry import Example, Source, Task


def slow_read(split, files, options):
    for i in range(100_000):
        time.sleep(0.01)
        yield Example(id=f"{split}{i}", context="some words here", question="q?", answer="a")


if __name__ == "__main__":
    work = Path(sys.argv[1])
    registry.all_tasks()
    registry.register(Task(name="slow", description="a slow reader", metric="em", group="test",
                            sources=(Source(path="slow/train.txt", url=None),),
                            splits={"train": ("slow/train.txt",)}, read=slow_read))
    (work / "raw" / "slow").mkdir(parents=True, exist_ok=True)
    (work / "raw" / "slow" / "train.txt").write_text("x\n", encoding="utf-8")
    print("started", flush=True)
    sys.exit(main(["prepare", "--tasks", "slow", "--mirror", str(work / "raw"), "--out", str(work / "out")]))
