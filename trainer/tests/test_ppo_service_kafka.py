"""PPO service against a real broker (`KAFKA_BROKERS`, else 127.0.0.1:9092; `npm run kafka:start`).

Not skipped when the broker is missing: these tests fail and say where they looked. Each test
makes its own topics and deletes them afterwards.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from spa_trainer.data.avro import spa_schemas
from spa_trainer.data.rollouts import SourcedRollout
from spa_trainer.kafka.client import KafkaLog, default_brokers
from spa_trainer.ppo.groups import pending_item
from spa_trainer.ppo.service import ServiceConfig, run_service
from spa_trainer.ppo.step import PpoConfig
from spa_trainer.training.checkpoint import latest_checkpoint

from .kafka_topics import topic_factory
from .ppo_rollouts import rollout

BROKERS = default_brokers(None)
TRACE = "00-" + "1" * 32 + "-" + "2" * 16 + "-01"


class Crash(RuntimeError):
    """Stands in for a killed process."""


@pytest.fixture(scope="module")
def brokers() -> str:
    host, _, port = BROKERS.split(",")[0].rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError as err:
        pytest.fail(f"no Kafka broker at {BROKERS} ({err}): start one with `npm run kafka:start` or set KAFKA_BROKERS")
    return BROKERS


@pytest.fixture()
def new_topic(brokers: str) -> Iterator[Callable[[int], str]]:
    yield from topic_factory(brokers, "test.ppo")


def _headers(record: dict[str, Any]) -> list[tuple[str, bytes]]:
    """What the TS generator puts on a Rollout (streams/kafka/spa-records.ts)."""
    fingerprint = spa_schemas().current("Rollout").fingerprint.hex()
    return [("spa-schema-fingerprint", fingerprint.encode()),
            ("spa-policy-version", str(record["policy_version"]).encode()), ("traceparent", TRACE.encode())]  # fmt: skip


def _group(name: str, version: int) -> list[dict[str, Any]]:
    return [
        rollout(f"{name}-a", name, ["Right"], [1.0], success=True, policy_version=version),
        rollout(f"{name}-b", name, ["Left"], [-0.1], penalty=-0.1, policy_version=version),
    ]


def _produce(topic: str, brokers: str) -> None:
    """Groups g0..g5 (keyed by group id, partition = g mod 2) in committed transactions, an
    aborted group gx, and one undecodable value on partition 1."""
    producer = Producer({"bootstrap.servers": brokers, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)

    def send(groups: list[int | str], commit: bool, bad: bool = False) -> None:
        producer.begin_transaction()
        if bad:
            producer.produce(topic, key=b"bad-key", value=b"\x00garbage", partition=1, headers=[("traceparent", TRACE)])
        for g in groups:
            for record in _group(f"g{g}", version=g if isinstance(g, int) else 0):
                value = spa_schemas().encode("Rollout", record)
                partition = g % 2 if isinstance(g, int) else 0
                producer.produce(
                    topic, key=f"g{g}".encode(), value=value, partition=partition, headers=_headers(record)
                )
        # Deliver first: ending a transaction while its partitions are still being added to it
        # can fail with INVALID_TXN_STATE on a freshly started broker (seen in CI).
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)

    send([0, 1, 2, 3], commit=True)
    send(["x"], commit=False)  # read_committed: never trained
    send([4, 5], commit=True, bad=True)


def _committed(brokers: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": brokers, "group.id": group})
    try:
        parts = consumer.committed([TopicPartition(topic, p) for p in (0, 1)], timeout=10)
        return {tp.partition: tp.offset for tp in parts if tp.offset >= 0}
    finally:
        consumer.close()


def _read_all(brokers: str, topic: str, expect: int) -> list[Any]:
    consumer = Consumer({"bootstrap.servers": brokers, "group.id": f"read-{topic}", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    messages: list[Any] = []
    deadline = time.monotonic() + 30
    while len(messages) < expect and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and not msg.error():
            messages.append(msg)
    consumer.close()
    return messages


def test_kafka_service_resumes_exactly_and_publishes(
    tmp_path: Path, brokers: str, new_topic: Callable[[int], str]
) -> None:
    rollouts, policy, dlq = new_topic(2), new_topic(1), new_topic(1)
    _produce(rollouts, brokers)
    cfg = ServiceConfig(
        model="tiny", input=f"kafka:{rollouts}", out=str(tmp_path / f"run-{rollouts}"), steps=3, groups_per_step=2,
        group_size=2, export_every=3, export_root=str(tmp_path / "policy"), publish=policy, start_version=5,
        brokers=brokers, dlq=f"kafka:{dlq}", idle_timeout=60, max_staleness=4,
        ppo=PpoConfig(keep_ratio=1.0, micro_batch_size=2),
    )  # fmt: skip
    trained: list[SourcedRollout] = []

    def dying(step: int, items: list[SourcedRollout]) -> None:
        if step == 2:
            raise Crash()
        trained.extend(items)

    with pytest.raises(Crash):
        run_service(cfg, on_step=dying)
    checkpoint = latest_checkpoint(Path(cfg.out))
    assert checkpoint is not None and checkpoint.name == "step_00000001"
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    low = {int(p): o for p, o in state["offsets"].items()}
    for line in (checkpoint / "pending.jsonl").read_text().splitlines():
        item = pending_item(line)
        low[item.partition] = min(low[item.partition], item.offset)
    assert _committed(brokers, f"spa-ppo-{Path(cfg.out).name}", rollouts) == low  # only after the checkpoint

    progress = run_service(cfg, on_step=lambda _s, items: trained.extend(items))

    ids = [i.record["trajectory_id"] for i in trained if i.record is not None]
    assert sorted(ids) == sorted(f"g{g}-{m}" for g in range(6) for m in "ab")  # once each, gx never
    assert len({(i.partition, i.offset) for i in trained}) == 12
    assert progress.step == 3 and progress.version == 6 and progress.rejected == {"bad-magic": 1}
    # trainer at v5; g0..g5 were sampled by v0..v5 → lags 5..0, g0 (lag 5) is over --max-staleness 4
    assert progress.over_max_staleness == 2

    [update] = _read_all(brokers, policy, 1)
    headers = dict(update.headers())
    assert update.key() == b"policy" and headers["spa-policy-version"] == b"6"
    assert headers["spa-schema-fingerprint"] == spa_schemas().current("PolicyUpdate").fingerprint.hex().encode()
    decoded = spa_schemas().decode("PolicyUpdate", update.value())
    assert (decoded["version"], decoded["stage"], decoded["step"]) == (6, "ppo", 3)
    assert decoded["uri"] == str((Path(cfg.export_root) / "v000006").resolve())

    dead = _read_all(brokers, dlq, 1)
    rejected = spa_schemas().decode("Rejected", dead[0].value())
    assert (rejected["key"], rejected["reason"], rejected["payload"]) == ("bad-key", "bad-magic", b"\x00garbage")
    assert rejected["source"].startswith(f"{rollouts}[1]@")
    assert dict(dead[0].headers())["traceparent"] == TRACE.encode()


def test_no_broker_names_the_address() -> None:
    with pytest.raises(ConnectionError, match=r"cannot reach Kafka at 127\.0\.0\.1:1 .*npm run kafka:start"):
        KafkaLog("spa.rollouts", "127.0.0.1:1", group_id="g", connect_timeout_s=2)
