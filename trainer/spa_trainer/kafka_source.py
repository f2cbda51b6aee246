"""Kafka `RowSource` over confluent-kafka (librdkafka): explicit offset ranges, read_committed.

The trainer owns its offsets: it assigns partitions itself (no group rebalancing), reads a fixed
`[start, end)` range partition by partition (deterministic order), and commits offsets to the
consumer group only after a checkpoint holding the same offsets is on disk (docs/spa-sft.md#sampler),
so the group's committed offsets are a convenience for tools, never the truth.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from .data import BadRow, BadRowHandler, Offsets, SftRow, SourcedRow

try:
    import confluent_kafka as ck
except ImportError as err:  # pragma: no cover - depends on the machine
    raise ImportError(
        "kafka input needs confluent-kafka: `pip install confluent-kafka` "
        "(or Debian's python3-confluent-kafka, which scripts/setup-python.mjs links into the venv)"
    ) from err

SINGLE_OBJECT_MAGIC = b"\xc3\x01"


def decode_value(value: bytes) -> dict[str, Any]:
    """Avro single-object frame (via `avro_records`) or, for hand-made topics, a JSON object."""
    if value.startswith(SINGLE_OBJECT_MAGIC):
        from .avro_records import spa_schemas  # resolves older writer schemas too

        return dict(spa_schemas().decode("SftRow", value))
    parsed = json.loads(value)
    if not isinstance(parsed, dict):
        raise TypeError(f"record value is JSON but not an object: {value[:60]!r}")
    return parsed


def default_brokers(brokers: str | None) -> str:
    """Brokers from the argument, else `KAFKA_BROKERS`, else the local dev broker."""
    return brokers or os.environ.get("KAFKA_BROKERS", "127.0.0.1:9092")


class KafkaRowSource:
    """SftRows from one topic; partitions are read in ascending order, each up to its end offset."""

    def __init__(
        self,
        topic: str,
        brokers: str | None = None,
        group_id: str = "spa-trainer-sft",
        decode: Callable[[bytes], dict[str, Any]] = decode_value,
        idle_timeout_s: float = 30.0,
    ) -> None:
        self.topic = topic
        self.decode = decode
        self.on_bad_row: BadRowHandler | None = None
        self.idle_timeout_s = idle_timeout_s
        self.consumer = ck.Consumer(
            {
                "bootstrap.servers": default_brokers(brokers),
                "group.id": group_id,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",  # never train on an aborted transaction
                "auto.offset.reset": "earliest",
            }
        )

    def describe(self) -> str:
        return f"kafka:{self.topic}"

    def partitions(self) -> list[int]:
        meta = self.consumer.list_topics(self.topic, timeout=10)
        topic = meta.topics.get(self.topic)
        if topic is None or topic.error is not None or not topic.partitions:
            raise ValueError(f"kafka topic {self.topic!r} not found or has no partitions ({topic and topic.error})")
        return sorted(topic.partitions)

    def end_offsets(self) -> Offsets:
        ends: Offsets = {}
        for p in self.partitions():
            _low, high = self.consumer.get_watermark_offsets(ck.TopicPartition(self.topic, p), timeout=10)
            ends[p] = int(high)
        return ends

    def read(self, start: Offsets, end: Offsets) -> Iterator[SourcedRow]:
        for p in sorted(end):
            first, stop = start.get(p, 0), end[p]
            if first < stop:
                yield from self._read_partition(p, first, stop)

    def _read_partition(self, partition: int, first: int, stop: int) -> Iterator[SourcedRow]:
        # Backpressure: one poll yields one record to the training loop, which pulls the next
        # only when it wants it (block policy); librdkafka's own fetch queue is bounded.
        self.consumer.assign([ck.TopicPartition(self.topic, partition, first)])
        idle_since = time.monotonic()
        try:
            while True:
                msg = self.consumer.poll(1.0)
                if msg is None or msg.error():
                    if self._position(partition) >= stop:
                        return  # read_committed skips control records: the position says we are done
                    if time.monotonic() - idle_since > self.idle_timeout_s:
                        raise TimeoutError(
                            f"kafka {self.topic}[{partition}] stalled before offset {stop} "
                            f"(position {self._position(partition)}); an open transaction?"
                        )
                    continue
                idle_since = time.monotonic()
                if msg.offset() >= stop:
                    return
                try:
                    row = SftRow.from_dict(self.decode(msg.value()))
                except (ValueError, TypeError, KeyError) as err:
                    key = msg.key().decode("utf-8", "replace") if msg.key() is not None else None
                    bad = BadRow(f"kafka {self.topic}[{partition}]@{msg.offset()}", partition, msg.offset(), key,
                                 msg.value() or b"", f"{type(err).__name__}: {err}")  # fmt: skip
                    if self.on_bad_row is None:
                        raise bad from err
                    self.on_bad_row(bad)
                else:
                    yield SourcedRow(partition, msg.offset(), row)
                if msg.offset() + 1 >= stop:
                    return
        finally:
            self.consumer.unassign()

    def _position(self, partition: int) -> int:
        [tp] = self.consumer.position([ck.TopicPartition(self.topic, partition)])
        return int(tp.offset) if tp.offset >= 0 else -1

    def commit(self, offsets: Offsets) -> None:
        """Record `offsets` in the consumer group (called only after a checkpoint landed)."""
        self.consumer.commit(
            offsets=[ck.TopicPartition(self.topic, p, o) for p, o in sorted(offsets.items())],
            asynchronous=False,
        )

    def close(self) -> None:
        """Leave cleanly (no group membership was taken: partitions are assigned by hand)."""
        self.consumer.close()
