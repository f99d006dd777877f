"""The verify job's written checksum, computed from the generator's definition, against crc32 record by record."""

from __future__ import annotations

import sys
import zlib

import pytest

from swarmkit.assets import SPARK_DIR

sys.path.insert(0, str(SPARK_DIR))
import verify_job as job  # noqa: E402  (the job file is a script, not a package module)


def brute_force(plan: job.Plan, seqs: range) -> int:
    tail = job.value_tail(plan)
    return sum(zlib.crc32(job.value_bytes(plan, seq, tail)) for seq in seqs)


def plan(records: int, owners: tuple[tuple[int, tuple[int, ...]], ...], payload: int = 100) -> job.Plan:
    return job.Plan("b:9094", "t", "ab12cd34", records, payload, owners)


@pytest.mark.parametrize(
    "records, owners",
    [
        (4_321, ((0, (0, 3)), (1, (1, 4)), (2, (2, 5)))),  # the benchmark's shape: step 6
        (2_500, ((0, (0,)),)),  # one broker, one partition: step 1
        (3_001, ((0, (0, 1, 2, 3, 4, 5, 6)), (1, (7,)))),  # uneven: steps 14 and 2
        (7, ((0, (0, 1)), (1, (2,)))),  # fewer records than a block
    ],
)
def test_every_partition_sum_matches_crc32_record_by_record(records, owners):
    p = plan(records, owners)
    sums = job.expected_checksums(p)
    assert sums == {part: brute_force(p, p.sequences(part)) for part in p.partitions}
    assert sum(p.expected(part) for part in p.partitions) == p.total


def test_sequences_follow_the_generators_partition_mapping():
    p = plan(50, ((0, (0, 3)), (1, (1, 4)), (2, (2, 5))))
    owner = {seq: part for part in p.partitions for seq in p.sequences(part)}
    for seq in range(p.total):
        slot, turn = seq % 3, seq // 3
        parts = p.owners[slot][1]
        assert owner[seq] == parts[turn % len(parts)]


def test_a_partition_nobody_leads_has_no_sequences_and_a_zero_sum():
    p = plan(10, ((0, (0,)),))
    assert p.sequences(9) == range(0)
    assert job.crc_sum(p, range(0)) == 0
