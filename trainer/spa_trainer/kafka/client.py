"""The trainer's one Kafka consumer (confluent-kafka / librdkafka): a topic as a `RecordLog`.

Both jobs read through it (`sources.py` composes it with their decoders): SFT reads a fixed
`[start, end)` range partition by partition (`read`), PPO reads forward from its checkpointed
position (`seek`, `poll`). Either way the trainer owns its offsets: partitions are assigned by
hand (no group rebalancing), reads are `read_committed` (never an aborted transaction), and
offsets reach the consumer group only after a checkpoint holding them is on disk
(docs/spa-sft.md#sampler), so the group's committed offsets are a convenience for tools, never
the truth. Backpressure: block. One poll hands one record to the training loop, which asks for
the next only when it wants it; librdkafka's own fetch queue is bounded.

Every client here (this consumer, `KafkaSink`'s producer, `require_topic`'s) is made by a
`KafkaConnection`: the settings of `kafka_config.py` (SASL, TLS: the TS side's variables) plus
librdkafka's error callback, which tells refused credentials and TLS failures from a broker that is
not there.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ..data.records import ConsumedRecord, Offsets
from .connection import (
    LOCAL_BROKERS,
    describe_client_error,
    describe_connect_failure,
    is_refusal,
    librdkafka_config,
    settings_from_env,
)

try:
    import confluent_kafka as ck
except ImportError as err:  # pragma: no cover - depends on the machine
    raise ImportError(
        "kafka input needs confluent-kafka: `pip install confluent-kafka` "
        "(or Debian's python3-confluent-kafka, which scripts/setup-python.mjs links into the venv)"
    ) from err


def default_brokers(brokers: str | None) -> str:
    """Brokers from the argument, else `KAFKA_BROKERS`, else the local dev broker."""
    return brokers or os.environ.get("KAFKA_BROKERS", "").strip() or LOCAL_BROKERS


Client = TypeVar("Client")


class KafkaConnection:
    """The settings one client is made with, and what librdkafka's error callback said about its
    connections (served by the client's `poll`; the last 32, a long outage repeats itself)."""

    def __init__(self, brokers: str | None) -> None:
        self.settings = settings_from_env(brokers)
        self.address = self.settings.brokers
        self.errors: deque[tuple[str, str]] = deque(maxlen=32)

    def client(self, make: Callable[[dict[str, Any]], Client], extra: dict[str, Any]) -> Client:
        """`make` (ck.Consumer, ck.Producer) with the connection's settings plus `extra`; a TLS file
        librdkafka cannot use is a ValueError naming its variable."""
        try:
            return make({**librdkafka_config(self.settings), "error_cb": self._on_error, **extra})
        except ck.KafkaException as err:
            raise describe_client_error(self.settings, err.args[0].str()) from err

    def _on_error(self, error: Any) -> None:
        self.errors.append((error.name(), error.str()))

    def last_error(self) -> str:
        return self.errors[-1][1] if self.errors else ""


def check_topic(
    client: Any, topic: str, connection: KafkaConnection, hint: str = "create it first", timeout_s: float = 10.0
) -> Any:
    """The topic's metadata (partitions), failing fast and saying why when no connection comes about
    (refused credentials and TLS failures at once, an unreachable broker after `timeout_s`) or
    `topic` is missing (a producer would otherwise wait out its delivery timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            meta = client.list_topics(topic, timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            break
        except ck.KafkaException as err:
            client.poll(0)  # serves the error callback (nothing is assigned yet: no record is taken)
            if time.monotonic() >= deadline or any(is_refusal(name) for name, _ in connection.errors):
                raise describe_connect_failure(
                    connection.settings, list(connection.errors), str(err.args[0]), ck.libversion()[0]
                ) from err
    found = meta.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        raise ValueError(
            f"kafka topic {topic!r} does not exist at {connection.address} ({found and found.error}); {hint}"
        )
    return found


def require_topic(topic: str, brokers: str | None) -> None:
    """Fails now (ConnectionError, ValueError) unless `topic` exists at the brokers."""
    connection = KafkaConnection(brokers)
    check_topic(connection.client(ck.Producer, {}), topic, connection)


# Commit errors that mean "the group's coordinator is moving, loading or out of reach", not "this
# commit is wrong". librdkafka (2.0 here) returns them from a synchronous commit instead of retrying,
# and a consumer that assigns partitions by hand re-finds its coordinator only in the background
# (librdkafka#2791): a warm-up's last commit, after minutes without one, failed NOT_COORDINATOR.
_COMMIT_RETRIABLE = frozenset(
    {
        ck.KafkaError.NOT_COORDINATOR,
        ck.KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        ck.KafkaError.COORDINATOR_NOT_AVAILABLE,
        ck.KafkaError.REQUEST_TIMED_OUT,
        ck.KafkaError._WAIT_COORD,
        ck.KafkaError._TIMED_OUT,
        ck.KafkaError._TRANSPORT,
    }
)


def _retriable_commit(err: ck.KafkaException) -> bool:
    error: Any = err.args[0] if err.args else None
    return isinstance(error, ck.KafkaError) and (error.code() in _COMMIT_RETRIABLE or bool(error.retriable()))


def commit_retrying(
    consumer: Any,
    offsets: list[Any],
    *,
    give_up_s: float = 60.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """`consumer.commit(offsets)`, synchronously; a commit the coordinator could not take
    (`_COMMIT_RETRIABLE`, or an error librdkafka marks retriable) is tried again after 0.5, 1, 2, 4,
    5, 5… s for up to `give_up_s`, then its last error is raised."""
    deadline, delay = clock() + give_up_s, 0.5
    while True:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            return
        except ck.KafkaException as err:
            if not (_retriable_commit(err) and clock() + delay <= deadline):
                raise
        sleep(delay)
        delay = min(2 * delay, 5.0)


class KafkaLog:
    """One topic, every partition, assigned by hand and read `read_committed`."""

    def __init__(
        self,
        topic: str,
        brokers: str | None = None,
        *,
        group_id: str,
        hint: str = "create it first",
        connect_timeout_s: float = 10.0,
        idle_timeout_s: float = 30.0,
    ) -> None:
        self.topic = topic
        self.connection = KafkaConnection(brokers)
        self.address = self.connection.address
        self.idle_timeout_s = idle_timeout_s  # `read` gives up on a range that stops short of its end
        self.consumer = self.connection.client(
            ck.Consumer,
            {
                "group.id": group_id,
                "enable.auto.commit": False,  # offsets reach the group only after a checkpoint
                "enable.partition.eof": True,
                "isolation.level": "read_committed",  # never train on an aborted transaction
                "auto.offset.reset": "earliest",
            },
        )
        try:
            self.partitions = sorted(
                check_topic(self.consumer, topic, self.connection, hint, connect_timeout_s).partitions
            )
        except (ConnectionError, ValueError):
            self.consumer.close()
            raise

    def describe(self) -> str:
        return f"kafka:{self.topic}"

    @property
    def last_error(self) -> str:
        """The latest transient error (broker away: librdkafka retries), for progress notes."""
        return self.connection.last_error()

    def location(self, partition: int, offset: int) -> str:
        return f"kafka {self.topic}[{partition}]@{offset}"

    def end_offsets(self) -> Offsets:
        ends: Offsets = {}
        for p in self.partitions:
            _low, high = self.consumer.get_watermark_offsets(ck.TopicPartition(self.topic, p), timeout=10)
            ends[p] = int(high)
        return ends

    def read(self, start: Offsets, end: Offsets) -> Iterator[ConsumedRecord]:
        for p in sorted(end):
            first, stop = start.get(p, 0), end[p]
            if first < stop:
                yield from self._read_partition(p, first, stop)

    def _read_partition(self, partition: int, first: int, stop: int) -> Iterator[ConsumedRecord]:
        self.consumer.assign([ck.TopicPartition(self.topic, partition, first)])
        idle_since = time.monotonic()
        try:
            while True:
                record = self.poll(1.0)
                if record is None:
                    if self._position(partition) >= stop:
                        return  # read_committed skips control records: the position says we are done
                    if time.monotonic() - idle_since > self.idle_timeout_s:
                        raise TimeoutError(
                            f"kafka {self.topic}[{partition}] stalled before offset {stop} "
                            f"(position {self._position(partition)}); an open transaction?"
                        )
                    continue
                idle_since = time.monotonic()
                if record.offset >= stop:
                    return
                yield record
                if record.offset + 1 >= stop:
                    return
        finally:
            self.consumer.unassign()

    def _position(self, partition: int) -> int:
        [tp] = self.consumer.position([ck.TopicPartition(self.topic, partition)])
        return int(tp.offset) if tp.offset >= 0 else -1

    def seek(self, start: Offsets) -> None:
        # OFFSET_STORED: a partition the checkpoint does not know starts at the group's committed
        # offset, else (auto.offset.reset) at the earliest record.
        self.consumer.assign(
            [ck.TopicPartition(self.topic, p, start.get(p, ck.OFFSET_STORED)) for p in self.partitions]
        )

    def poll(self, timeout_s: float) -> ConsumedRecord | None:
        msg = self.consumer.poll(timeout_s)
        if msg is None:
            return None
        error = msg.error()
        if error:
            if error.fatal():
                raise RuntimeError(f"kafka {self.topic} at {self.address}: fatal consumer error {error}")
            if error.code() != ck.KafkaError._PARTITION_EOF:
                self.connection.errors.append((error.name(), str(error)))  # transient: librdkafka retries
            return None
        raw_key = msg.key()
        key = raw_key.decode("utf-8", "replace") if raw_key is not None else None
        headers = {name: value or b"" for name, value in (msg.headers() or [])}
        return ConsumedRecord(int(msg.partition()), int(msg.offset()), key, msg.value() or b"", headers)

    def exhausted(self) -> bool:
        return False

    def commit(self, offsets: Offsets) -> None:
        if offsets:
            commit_retrying(self.consumer, [ck.TopicPartition(self.topic, p, o) for p, o in sorted(offsets.items())])

    def close(self) -> None:
        """Leave cleanly (no group membership was taken: partitions are assigned by hand)."""
        self.consumer.close()


class KafkaSink:
    """The trainer's producer to one topic (dead letters, PolicyUpdates): idempotent, acks=all,
    the topic checked at open, and `flush` raising when a record did not reach the broker."""

    def __init__(self, topic: str, brokers: str | None) -> None:
        self.topic = topic
        connection = KafkaConnection(brokers)
        self.address = connection.address
        self.producer = connection.client(ck.Producer, {"enable.idempotence": True, "acks": "all"})
        check_topic(self.producer, topic, connection)
        self.errors: list[str] = []

    def _delivered(self, err: object, _msg: object) -> None:
        if err is not None:
            self.errors.append(str(err))

    def produce(self, key: bytes | None, value: bytes, headers: list[tuple[str, bytes]]) -> None:
        """Queue one record (delivery is confirmed by `flush`)."""
        self.producer.produce(self.topic, key=key, value=value, headers=headers, on_delivery=self._delivered)

    def flush(self, what: str) -> None:
        """Block until every queued record is delivered; else ConnectionError naming `what`, the
        topic and the address."""
        remaining = self.producer.flush(30)
        if remaining or self.errors:
            errors, self.errors = self.errors, []
            raise ConnectionError(
                f"{what} not delivered to {self.topic} at {self.address} ({remaining} still queued): "
                f"{errors or 'timeout (is the broker up?)'}"
            )
