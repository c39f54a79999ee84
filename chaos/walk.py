"""Every key the CommitLog holds, read record by record without the ConsumeQueues.

The drain of :mod:`chaos.load` reads what consumers can reach (through the ConsumeQueues);
this walk reads what the CommitLog itself kept, after the broker stopped cleanly. An acked
key in the CommitLog but never read back was *unreachable* (a ConsumeQueue fault), not
lost from the log.
"""

from __future__ import annotations

import collections
import hashlib
from pathlib import Path

from chaos.cluster import STORE_CONF, TOPIC
from rmq import MessageStore


def commitlog_keys(root: Path, conf: dict[str, str]) -> collections.Counter[str]:
    """``key -> copies`` of the chaos topic's messages in the CommitLog under ``root``."""
    merged = {**STORE_CONF, **conf}
    file_size = int(merged["mappedFileSizeCommitLog"])
    counts: collections.Counter[str] = collections.Counter()
    with MessageStore(str(root), merged) as store:
        offset, end = store.get_min_phy_offset(), store.get_max_phy_offset()
        while offset < end:
            m = store.look_message_by_offset(offset)
            if m is None or m.store_size <= 0:
                offset = (offset // file_size + 1) * file_size  # the file's blank end
                continue
            if m.topic == TOPIC:
                counts[m.body.split(b"|", 1)[0].decode(errors="replace")] += 1
            offset += m.store_size
    return counts


def commit_log_digest(commit_log_dir: Path, upto: int, file_size: int) -> str:
    """SHA-256 of the CommitLog bytes ``[0, upto)`` under ``commit_log_dir`` (files named by
    their start offset): a master and its slave hold the same digest once the slave caught up.
    """
    digest = hashlib.sha256()
    done = 0
    for f in sorted(commit_log_dir.iterdir(), key=lambda p: int(p.name)):
        if done >= upto:
            break
        if int(f.name) != done:
            raise ValueError(f"{f} does not start at {done}: the CommitLog has a gap")
        with f.open("rb") as fh:
            chunk = fh.read(min(upto - done, file_size))
        digest.update(chunk)
        done += len(chunk)
    if done != upto:
        raise ValueError(f"{commit_log_dir} holds {done} of {upto} bytes")
    return digest.hexdigest()
