"""The trainer's side of `npm run bench -- freshness` (bench/freshness.ts).

Reads one rollouts topic the way the PPO service does (KafkaLog, read_committed, then RolloutSource's
decode and checks) from its current end, and notes for every record how long after its trajectory
was assembled (`created_at`, ms since the epoch, the generator's clock; same machine) it was in
hand, decoded. Prints `ready` once it is positioned, then one JSON line when `count` records came
(or nothing came for `idle` seconds): the latencies' count and percentiles in ms.

    python bench/python/freshness.py <topic> <brokers> <count> [idle seconds]
"""

import json
import sys
import time
from datetime import datetime

from spa_trainer.data.rollouts import RolloutSource
from spa_trainer.kafka.client import KafkaLog


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on sorted values."""
    if not sorted_values:
        return float("nan")
    position = q * (len(sorted_values) - 1)
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def main() -> None:
    topic, brokers, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    idle_s = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
    log = KafkaLog(topic, brokers, group_id=f"bench-freshness-{topic}")
    source = RolloutSource(log, log.end_offsets())
    # Warm the fetch path before the generator starts: the first poll joins nothing (partitions
    # are assigned by hand) but opens the broker connections.
    source.poll(0.5)
    print("ready", flush=True)
    latencies: list[float] = []
    rejected = 0
    idle_since = time.monotonic()
    try:
        while len(latencies) + rejected < count and time.monotonic() - idle_since < idle_s:
            item = source.poll(0.1)
            if item is None:
                continue
            in_hand_ms = time.time() * 1000
            idle_since = time.monotonic()
            if item.record is None:
                rejected += 1
                continue
            created = item.record["created_at"]  # fastavro gives timestamp-millis as a datetime
            created_ms = created.timestamp() * 1000 if isinstance(created, datetime) else float(created)
            latencies.append(in_hand_ms - created_ms)
    finally:
        source.close()
    latencies.sort()
    print(
        json.dumps(
            {
                "records": len(latencies),
                "rejected": rejected,
                "p50_ms": round(percentile(latencies, 0.5), 1),
                "p90_ms": round(percentile(latencies, 0.9), 1),
                "p99_ms": round(percentile(latencies, 0.99), 1),
                "max_ms": round(latencies[-1], 1) if latencies else None,
                "min_ms": round(latencies[0], 1) if latencies else None,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
