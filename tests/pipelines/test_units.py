"""pipelines/units.py: shards as units of work, their spread over the workers, and one read per split."""
from __future__ import annotations

from types import SimpleNamespace

from deca.registry import Dropped, Example
from pipelines import units as U


def test_units_are_balanced_costliest_first_and_deterministically():
    units = [U.Unit("t", "train", i, 0, 1, 1, cost) for i, cost in enumerate([5, 9, 4, 3, 3, 1])]
    bins = list(U.assign_bins(units, 2))
    assert [u.cost for _, u in bins] == [9, 5, 4, 3, 3, 1]
    load = {0: 0, 1: 0}
    for b, unit in bins:
        load[b] += unit.cost
    assert load == {0: 13, 1: 12}
    assert bins == list(U.assign_bins(list(reversed(units)), 2))
    assert [b for b, _ in U.assign_bins(units, 0)] == list(range(6))  # unknown parallelism: a bin per unit


def test_a_pass_reads_its_split_once_for_all_its_shards():
    """A bin's contiguous shards of one split are one pass (read once, in reader order: linear time in the
    split's size); a round-robin shard, which holds positions of the whole split, is a pass of its own."""
    reads = []

    def read(split, paths, options):
        reads.append(split)
        for i in range(12):
            yield Dropped(id=str(i), reason="x") if i == 4 else Example(str(i), "c", "q", "a")

    task = SimpleNamespace(read=read)
    ranges = [U.Unit("t", "train", s, 3 * s, 3 * s + 3, 1, 0) for s in (2, 0, 1)]
    round_robin = U.Unit("t", "train", 7, 1, 12, 4, 0)
    other = U.Unit("u", "test", 0, 0, 2, 1, 0)
    got = list(U.passes([other, *ranges, round_robin]))
    assert got == [tuple(sorted(ranges, key=lambda u: u.start)), (round_robin,), (other,)]
    read_back = [(k, seq, ex.id) for k, seq, ex in U.read_ranges(task, got[0], [], None)]
    assert read_back == [(0, 0, "0"), (0, 1, "1"), (0, 2, "2"), (1, 3, "3"), (1, 5, "5"),
                         (2, 6, "6"), (2, 7, "7"), (2, 8, "8")]
    assert reads == ["train"]  # one read, which stopped after position 8
    assert [seq for _, seq, _ in U.read_ranges(task, got[1], [], None)] == [1, 5, 9]
