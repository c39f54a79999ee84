"""Every key the CommitLog holds, read record by record without the ConsumeQueues.

The drain of :mod:`chaos.load` reads what consumers can reach (through the ConsumeQueues);
this walk reads what the CommitLog itself kept, after the broker stopped cleanly. An acked
key in the CommitLog but never read back was *unreachable* (a ConsumeQueue fault), not
lost from the log.
"""

from __future__ import annotations

import collections
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
