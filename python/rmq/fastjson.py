"""Read the JSON that RocketMQ brokers and nameservers write (fastjson's dialect).

Java RocketMQ serializes bodies with fastjson, which is not always standard JSON: maps with
non-string keys get bare keys (``{0:"127.0.0.1:10911"}``, BrokerData from nameservers older
than 4.9.4), maps keyed by an object get the object itself as the key
(``{{"brokerName":"b","queueId":0,"topic":"T"}:{…}}``, ConsumeStats and TopicStatsTable), and
strings may be single-quoted. Standard JSON goes through :func:`json.loads` untouched; anything
else is rewritten as standard JSON by the one fastjson reader of the project, in Rust
(``crates/rmq-protocol/src/json_compat.rs``, through ``rmq._rmq.fastjson_to_json``), which
turns every key into a string (an object key becomes its compact JSON text).
:func:`message_queue_key` turns such a key back into a :class:`MessageQueue`.
"""

from __future__ import annotations

import json
from typing import Any

from rmq._rmq import fastjson_to_json
from rmq.client.message_queue import MessageQueue

__all__ = ["FastjsonError", "loads", "message_queue_key"]


class FastjsonError(ValueError):
    """Text that is not JSON in either dialect."""


def loads(data: bytes | str) -> Any:
    """Parse a JSON body from a RocketMQ peer, standard or fastjson-flavoured."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        return json.loads(text)
    except ValueError:
        pass
    except RecursionError:
        raise FastjsonError(_TOO_DEEP) from None
    try:
        standard = fastjson_to_json(text)
    except ValueError as exc:
        raise FastjsonError(f"{exc}; the peer did not send a JSON body") from None
    try:
        return json.loads(standard)
    except RecursionError:
        raise FastjsonError(_TOO_DEEP) from None


# json.loads recurses per level of nesting: hostile input must not become a RecursionError.
_TOO_DEEP = "JSON nested too deeply for Python's parser; the peer did not send a usable body"


def message_queue_key(key: str) -> MessageQueue:
    """The MessageQueue of a map key as :func:`loads` leaves it (its JSON text)."""
    try:
        d = json.loads(key)
        return MessageQueue(str(d["topic"]), str(d["brokerName"]), int(d["queueId"]))
    except (ValueError, TypeError, KeyError) as exc:
        raise FastjsonError(f"not a MessageQueue key: {key!r}") from exc
