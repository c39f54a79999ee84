"""Checks that the power-loss layer loses what it must and keeps what it must, before use.

A campaign that reports "0 lost" through a layer that never dropped anything proves
nothing, so ``make chaos`` first writes through a fresh mount of :mod:`chaos.powerloss_fs`
the way the store does (a preallocated file written through a shared mmap, part of it then
msynced; pwrite then fdatasync; pwrite without sync; a new file written, closed, renamed, not
synced), cuts the power, and reads the backing directory: only the synced bytes may be there.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Any

from chaos.cluster import PowerLossMount

SIZE = 1 << 20


def run(work: Path) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    fs = PowerLossMount(work / "disk", work / "mnt", work / "fuse.log")
    fs.mount()
    try:
        path = work / "mnt" / "data"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.posix_fallocate(fd, 0, SIZE)
            with mmap.mmap(fd, SIZE) as m:
                m[0:12] = b"mmap-synced!"
                m.flush(0, mmap.PAGESIZE)  # msync(MS_SYNC) of the first page
                m[SIZE // 2 : SIZE // 2 + 14] = b"mmap-unsynced!"
            os.pwrite(fd, b"pwrite-synced", 8192)
            os.fdatasync(fd)  # also makes the mmap page written above durable
            os.pwrite(fd, b"pwrite-unsynced", 12288)
            with mmap.mmap(fd, SIZE) as m:
                m[SIZE - 16 : SIZE] = b"mmap-unsynced-2!"
            unsynced_visible = os.pread(fd, 15, 12288) == b"pwrite-unsynced"
        finally:
            os.close(fd)
        (work / "mnt" / "new.tmp").write_bytes(b"never synced")
        os.rename(work / "mnt" / "new.tmp", work / "mnt" / "new.json")
    finally:
        fs.power_loss()
        fs.unmount()
    data = (work / "disk" / "data").read_bytes()
    checks = {
        "file size kept (fallocate is metadata)": len(data) == SIZE,
        "msynced mmap page kept": data[0:12] == b"mmap-synced!",
        "mmap page dirtied before an fdatasync kept": data[SIZE // 2 : SIZE // 2 + 14]
        == b"mmap-unsynced!",
        "fdatasynced pwrite kept": data[8192:8205] == b"pwrite-synced",
        "unsynced pwrite visible before the power loss": unsynced_visible,
        "unsynced pwrite lost": data[12288:12303] == bytes(15),
        "unsynced mmap write lost": data[SIZE - 16 :] == bytes(16),
        "renamed new file kept, its unsynced data lost": (work / "disk" / "new.json").stat().st_size
        == 0,
    }
    return {"ok": all(checks.values()), "checks": checks}
