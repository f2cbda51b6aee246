"""Kafka input and PolicyUpdate publishing against a real broker (`KAFKA_BROKERS` or 127.0.0.1:9092).

These run only when a broker answers (start one with `npm run kafka:start`); each test uses its
own fresh topic, so a user's topics are never touched.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ck = pytest.importorskip("confluent_kafka", reason="no Kafka client in this venv")

from spa_trainer.data.avro import spa_schemas
from spa_trainer.export import export_policy
from spa_trainer.kafka.client import default_brokers
from spa_trainer.sft.config import SftConfig
from spa_trainer.sft.train import run_sft
from spa_trainer.topics.policy_updates import policy_update_from_manifest, publish_policy_update
from spa_trainer.topics.sources import open_source
from spa_trainer.training.checkpoint import latest_checkpoint

from .kafka_topics import topic_factory
from .synthetic import sokoban_rows

BROKERS = default_brokers(None)


def _reachable(brokers: str) -> bool:
    host, _, port = brokers.split(",")[0].rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not _reachable(BROKERS), reason=f"no Kafka broker at {BROKERS}")


@pytest.fixture()
def new_topic() -> Iterator[Callable[[int], str]]:
    """Creates fresh topics and deletes them afterwards."""
    yield from topic_factory(BROKERS, "test.trainer")


def _produce_sft_rows(topic: str, count: int) -> None:
    producer = ck.Producer({"bootstrap.servers": BROKERS, "enable.idempotence": True})
    for i, row in enumerate(sokoban_rows(count)):
        record = {**row, "env": "sokoban", "policy_version": 0, "annotation": "gt", "mask_transitions": False}
        value = spa_schemas().encode("SftRow", record)
        headers = [("traceparent", f"00-{i + 1:032x}-{i + 1:016x}-01".encode())]
        producer.produce(topic, key=str(row["trajectory_id"]).encode(), value=value, headers=headers, partition=i % 2)
    assert producer.flush(30) == 0


def test_sft_from_kafka_resumes_at_the_checkpointed_position(tmp_path: Path, new_topic: Callable[[int], str]) -> None:
    topic = new_topic(2)
    _produce_sft_rows(topic, 8)
    source = open_source(f"kafka:{topic}", brokers=BROKERS)
    assert source.end_offsets() == {0: 4, 1: 4}
    rows = list(source.read({0: 1, 1: 0}, {0: 3, 1: 2}))
    assert [(r.partition, r.offset) for r in rows] == [(0, 1), (0, 2), (1, 0), (1, 1)]
    assert rows[0].headers["traceparent"] == f"00-{3:032x}-{3:016x}-01".encode()  # kept for the step span
    source.close()

    seen: list[tuple[int, int]] = []
    cfg = SftConfig(
        input=f"kafka:{topic}",
        brokers=BROKERS,
        out=str(tmp_path / "run"),
        epochs=1,
        batch_size=2,
        val_fraction=0.0,
        eval_rows=0,
        stop_after_steps=2,
    )
    run_sft(cfg, on_step=lambda _s, batch, _l: seen.extend((r.partition, r.offset) for r in batch))
    checkpoint = latest_checkpoint(Path(cfg.out))
    assert checkpoint is not None and checkpoint.name == "step_00000002"
    cfg.stop_after_steps = None
    run_sft(cfg, on_step=lambda _s, batch, _l: seen.extend((r.partition, r.offset) for r in batch))
    assert sorted(seen) == [(p, o) for p in (0, 1) for o in range(4)]
    assert len(seen) == len(set(seen))


def test_policy_update_round_trip(tiny_dir: Path, tmp_path: Path, new_topic: Callable[[int], str]) -> None:
    topic = new_topic(1)
    artifact = export_policy(tiny_dir, tmp_path / "artifacts", stage="sft", step=3, model_name="tiny")
    record = policy_update_from_manifest(artifact)
    publish_policy_update(record, topic=topic, brokers=BROKERS)
    consumer = ck.Consumer({"bootstrap.servers": BROKERS, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.assign([ck.TopicPartition(topic, 0, 0)])
    msg = None
    for _ in range(30):
        msg = consumer.poll(1.0)
        if msg is not None and not msg.error():
            break
    consumer.close()
    assert msg is not None and msg.key() == b"policy"
    decoded = spa_schemas().decode("PolicyUpdate", msg.value())
    assert decoded["version"] == 1 and decoded["stage"] == "sft" and decoded["step"] == 3
    assert decoded["sha256"] == record["sha256"] and decoded["uri"] == str(artifact.resolve())
