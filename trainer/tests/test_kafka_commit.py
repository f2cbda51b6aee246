"""The trainer's offset commit: a coordinator that moves or reloads is waited out, a wrong commit
is not (spa_trainer.kafka.client.commit_retrying)."""

from __future__ import annotations

import confluent_kafka as ck
import pytest

from spa_trainer.kafka.client import commit_retrying


class Consumer:
    """Fails its first commits with the given error codes, then commits."""

    def __init__(self, *failures: int) -> None:
        self.failures = list(failures)
        self.committed: list[object] = []

    def commit(self, *, offsets: list[object], asynchronous: bool) -> None:
        assert asynchronous is False
        if self.failures:
            raise ck.KafkaException(ck.KafkaError(self.failures.pop(0)))
        self.committed.append(offsets)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_a_moving_coordinator_is_retried_until_the_commit_lands() -> None:
    consumer, clock = Consumer(ck.KafkaError.NOT_COORDINATOR, ck.KafkaError.COORDINATOR_LOAD_IN_PROGRESS), Clock()
    commit_retrying(consumer, ["p0@12"], sleep=clock.sleep, clock=lambda: clock.now)
    assert consumer.committed == [["p0@12"]]
    assert clock.sleeps == [0.5, 1.0]


def test_a_coordinator_gone_for_good_is_reported_after_the_budget() -> None:
    consumer, clock = Consumer(*[ck.KafkaError.NOT_COORDINATOR] * 100), Clock()
    with pytest.raises(ck.KafkaException, match="NOT_COORDINATOR"):
        commit_retrying(consumer, ["p0@12"], give_up_s=20.0, sleep=clock.sleep, clock=lambda: clock.now)
    assert consumer.committed == []
    assert clock.sleeps == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]  # 17.5 s waited; the next 5 s would pass 20
    assert clock.now <= 20.0


def test_a_commit_the_broker_refuses_is_not_retried() -> None:
    consumer, clock = Consumer(ck.KafkaError.OFFSET_METADATA_TOO_LARGE), Clock()
    with pytest.raises(ck.KafkaException, match="OFFSET_METADATA_TOO_LARGE"):
        commit_retrying(consumer, ["p0@12"], sleep=clock.sleep, clock=lambda: clock.now)
    assert clock.sleeps == []
