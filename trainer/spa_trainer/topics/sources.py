"""Where the jobs' records come from: `jsonl:<path>` or `kafka:<topic>`, composed with each job's decoder.

One log per input (`records.JsonlLog`, `kafka_source.KafkaLog`: the single Kafka consumer), one
decoder per job: SFT reads SftRows over a fixed range (`data.RowSource`), PPO reads Rollouts
forward from its checkpointed position (`rollout_source.RolloutSource`). The consume, offset and
commit code is the log's, shared; only decoding differs.
"""

from __future__ import annotations

from pathlib import Path

from ..data.records import JsonlLog, Offsets, RecordLog
from ..data.rollouts import RolloutSource
from ..data.sft_rows import RowSource


def open_log(
    spec: str, missing: str, *, brokers: str | None, group_id: str, hint: str = "create it first"
) -> RecordLog:
    """`jsonl:<path>` (a missing file raises `missing` with its path) or `kafka:<topic>`
    (brokers from the argument or `KAFKA_BROKERS`; a missing topic names `hint`)."""
    kind, _, target = spec.partition(":")
    if kind == "jsonl" and target:
        return JsonlLog(Path(target), missing)
    if kind == "kafka" and target:
        from ..kafka.client import KafkaLog  # optional dependency: confluent-kafka

        return KafkaLog(target, brokers, group_id=group_id, hint=hint)
    raise ValueError(f"input {spec!r}: expected jsonl:<path> or kafka:<topic>")


def open_source(spec: str, *, brokers: str | None = None) -> RowSource:
    """SFT rows: the whole log is read range by range (consumer group `spa-trainer-sft`)."""
    missing = "SFT input {path} does not exist (expected a JSONL file of SftRow)"
    return RowSource(open_log(spec, missing, brokers=brokers, group_id="spa-trainer-sft"))


def open_rollout_source(spec: str, start: Offsets, *, brokers: str | None = None, group_id: str = "") -> RolloutSource:
    """Rollouts positioned at `start` (partitions missing from it start at the group's committed
    offset, else the earliest)."""
    missing = "PPO input {path} does not exist (expected a JSONL file of Rollout records)"
    hint = "create it (infra/kafka topics) or run a generator with --target rollouts --out kafka first"
    log = open_log(spec, missing, brokers=brokers, group_id=group_id or "spa-ppo", hint=hint)
    try:
        return RolloutSource(log, start)
    except BaseException:
        log.close()
        raise
