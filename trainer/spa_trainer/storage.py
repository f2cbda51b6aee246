"""The trainer's writes that fail for want of room or permission, told in one line; stale temp folders.

A full disk or an unwritable folder is the user's to fix, so it ends a trainer with one line naming
the folder (and, for a full disk, the space it needs and has) and exit 2, not a traceback:
safetensors reports a full disk as `SafetensorError: … IoError(Os { code: 28, … })`, which names no
file and is no OSError, so the checkpoint writer translates it where it knows the folder.

A killed checkpoint save leaves its hidden temp folder (`.step_<n>.<random>`, the size of a
checkpoint) beside the checkpoints; `remove_stale_temp_folders` removes them when a trainer starts.
"""

from __future__ import annotations

import errno
import re
import shutil
import sys
from pathlib import Path

DISK_FULL = {errno.ENOSPC, errno.EDQUOT}
NOT_WRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS}
# How safetensors' Rust errors spell them: `Os { code: 28, kind: StorageFull, … }` or `(os error 28)`.
_RUST_ERRNO = re.compile(r"(?:code: |os error )(\d+)")

# What a checkpoint save (`checkpoint.write_atomic_checkpoint`) writes before its rename: its temp
# folder, and the temp file of the `latest` pointer.
_STALE_TEMP = re.compile(r"^\.step_\d+\..+$|^\.latest\.tmp$")


class StorageError(Exception):
    """A write the disk had no room or permission for: the message names the folder and what to do."""


def _errno_of(error: BaseException) -> int | None:
    if isinstance(error, OSError):
        return error.errno
    if type(error).__name__ == "SafetensorError":  # safetensors' Rust I/O error: the errno is in the text
        found = _RUST_ERRNO.search(str(error))
        return int(found.group(1)) if found else None
    return None


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def storage_error(error: BaseException, folder: Path, needed: int | None = None) -> StorageError | None:
    """`error` as a one-line StorageError about writing into `folder` (`needed`: bytes the write
    takes, when known), or None when it is not a full disk or an unwritable folder."""
    code = _errno_of(error)
    if code in DISK_FULL:
        free = shutil.disk_usage(_existing(folder)).free
        need = f"needs about {_mb(needed)}, " if needed else ""
        return StorageError(
            f"the disk of {folder} is full ({need}{_mb(free)} free): free space there, or point the "
            "run elsewhere, and run the same command again (nothing written so far is lost)"
        )
    if code in NOT_WRITABLE:
        return StorageError(
            f"cannot write into {folder}: {errno.errorcode.get(code or 0, code)} (not writable by this user); "
            "make it writable or point the run elsewhere"
        )
    return None


def _existing(folder: Path) -> Path:
    """`folder`, or its nearest existing parent (disk_usage needs a path that exists)."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def folder_of(error: OSError) -> Path | None:
    """The folder an OSError's file is in (None when it names no file)."""
    if not error.filename:
        return None
    path = Path(str(error.filename))
    return path if path.is_dir() else path.parent


def checkpoint_bytes(root: Path, partial: Path) -> int | None:
    """What a checkpoint in `root` takes: the newest complete one's size (they are all alike), else
    what the failed one (`partial`) held when it failed, at least."""
    done = sorted(root.glob("step_*"))
    return _size(done[-1]) if done else (_size(partial) or None)


def remove_stale_temp_folders(run_dir: Path, label: str) -> list[Path]:
    """Removes what killed checkpoint saves left in `run_dir/checkpoints`, saying so on stderr as
    `[label] removed …`; returns what it removed. Only at a trainer's start: a save in progress
    has one too."""
    root = run_dir / "checkpoints"
    stale = sorted(p for p in root.iterdir() if _STALE_TEMP.match(p.name)) if root.is_dir() else []
    for path in stale:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        print(f"[{label}] removed {path}, left by a checkpoint save that was cut off", file=sys.stderr, flush=True)
    return stale
