"""Throwaway Kafka topics for the trainer's Kafka tests (created per test, deleted after)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

from confluent_kafka.admin import AdminClient, NewTopic


def topic_factory(brokers: str, prefix: str, replication: int = 1) -> Iterator[Callable[[int], str]]:
    """Fixture body: yields `create(partitions) -> topic name`, then deletes what it created. With
    `replication` 3 (a local cluster) the topics are placed as SPA's are: min.insync.replicas 2."""
    admin = AdminClient({"bootstrap.servers": brokers})
    created: list[str] = []

    def create(partitions: int) -> str:
        name = f"{prefix}.{uuid.uuid4().hex[:10]}"
        config = {"min.insync.replicas": "2"} if replication >= 3 else {}
        topic = NewTopic(name, num_partitions=partitions, replication_factor=replication, config=config)
        for future in admin.create_topics([topic]).values():
            future.result(30)
        created.append(name)
        return name

    yield create
    if created:
        for future in admin.delete_topics(created).values():
            future.result(30)
