"""Whole groups for PPO: records wait here, by `group_id`, until their group has K members.

A PPO step needs complete groups (the std filter and the advantages compare a group's members,
docs/spa-ppo.md#group-filter); the generator keys a group's records by group id, so they share a
partition but may interleave with other groups. Records read but not yet trained are part of the trainer's
position: the checkpoint stores them (`pending_line`) beside the next offsets.
"""

from __future__ import annotations

import base64
import json
from collections import OrderedDict
from collections.abc import Iterable

from ..data.reject_reasons import RejectReason
from ..data.rollouts import SourcedRollout


class GroupBuffer:
    """Read-but-untrained records by `group_id`, in arrival order, until a group has K members.

    Bounded: a group never holds more than K records, and at most `max_open` groups may be
    incomplete; past that the oldest open group *slides* out to the DLQ ("incomplete-group"),
    so a producer that died mid-group cannot pin memory or the committed offsets forever.

    A group id is trained once: records of a group already taken go to the DLQ ("group-trained").
    A generator restarted in the middle of a batch plays that batch again; without this, its
    second copy would make new groups and trail every later step as stale records.
    """

    def __init__(self, group_size: int, max_open: int, trained: Iterable[str] = ()) -> None:
        self.group_size = group_size
        self.max_open = max_open
        self.groups: OrderedDict[str, list[SourcedRollout]] = OrderedDict()
        self.complete: list[str] = []
        self.trained: set[str] = set(trained)  # kept in the checkpoint (`trained_groups.json`)

    def add(self, item: SourcedRollout) -> list[tuple[SourcedRollout, RejectReason, str]]:
        """Add an accepted item; returns the items rejected on the way (item, reason, detail)."""
        assert item.record is not None
        gid = str(item.record["group_id"])
        if gid in self.trained:
            return [(item, "group-trained", f"group {gid!r} was trained in an earlier step (a replayed batch?)")]
        if gid in self.complete:
            return [(item, "group-overflow", f"group {gid!r} already has {self.group_size} members (--group-size)")]
        members = self.groups.setdefault(gid, [])
        if any(m.record and m.record["trajectory_id"] == item.record["trajectory_id"] for m in members):
            return [(item, "duplicate-trajectory", f"trajectory {item.record['trajectory_id']!r} already in {gid!r}")]
        members.append(item)
        if len(members) == self.group_size:
            self.complete.append(gid)
        open_ids = [g for g in self.groups if g not in self.complete]
        if len(open_ids) <= self.max_open:
            return []
        oldest = open_ids[0]
        detail = f"group {oldest!r} still had {len(self.groups[oldest])}/{self.group_size} members"
        return [(m, "incomplete-group", detail) for m in self.groups.pop(oldest)]

    def ready(self, groups: int) -> bool:
        """Whether `groups` complete groups are waiting."""
        return len(self.complete) >= groups

    def take(self, groups: int) -> list[SourcedRollout]:
        """The records of the first `groups` groups to complete (completion order, member order)."""
        taken, self.complete = self.complete[:groups], self.complete[groups:]
        self.trained.update(taken)
        return [m for gid in taken for m in self.groups.pop(gid)]

    def items(self) -> list[SourcedRollout]:
        """Everything still held (written into the checkpoint)."""
        return [m for members in self.groups.values() for m in members]


def pending_line(item: SourcedRollout) -> str:
    """One JSON line for a held record (bytes as base64), for the checkpoint's `pending.jsonl`."""
    headers = {k: base64.b64encode(v).decode() for k, v in item.headers.items()}
    payload = base64.b64encode(item.payload).decode()
    return json.dumps({"partition": item.partition, "offset": item.offset, "key": item.key,
                       "headers": headers, "payload": payload, "record": item.record})  # fmt: skip


def pending_item(line: str) -> SourcedRollout:
    """Inverse of `pending_line`."""
    raw = json.loads(line)
    headers = {k: base64.b64decode(v) for k, v in raw["headers"].items()}
    return SourcedRollout(raw["partition"], raw["offset"], raw["key"], base64.b64decode(raw["payload"]),
                          headers, record=raw["record"])  # fmt: skip
