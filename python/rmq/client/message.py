"""Messages as Python code writes them: :class:`Message` for sending. Received messages are
``rmq.StoredMessage`` objects (decoded in Rust), with the stored fields added.

Tags, keys and the delay level are message properties on the wire (``TAGS``, ``KEYS``,
``DELAY``), as in RocketMQ; the attributes here read and write those properties, so what a
Java consumer sees is exactly what was set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rmq._rmq import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_SHARDING_KEY,
    PROPERTY_TAGS,
    PROPERTY_WAIT_STORE_MSG_OK,
)

__all__ = ["Message"]

_TAGS = PROPERTY_TAGS
_KEYS = PROPERTY_KEYS
_DELAY = PROPERTY_DELAY_TIME_LEVEL
_WAIT = PROPERTY_WAIT_STORE_MSG_OK
_SHARDING_KEY = PROPERTY_SHARDING_KEY


class Message:
    """A message to send.

    ``body`` is bytes (a ``str`` is encoded as UTF-8). ``keys`` may be one key or several
    (stored space-separated, each indexed by the broker for ``queryMsgByKey``). ``delay_level``
    1-18 delays delivery by the broker's ``messageDelayLevel`` (1s 5s 10s 30s 1m ... 2h).
    """

    __slots__ = ("body", "flag", "properties", "topic")

    def __init__(
        self,
        topic: str,
        body: bytes | bytearray | memoryview | str,
        tags: str | None = None,
        keys: str | Iterable[str] | None = None,
        properties: Mapping[str, str] | None = None,
        delay_level: int = 0,
        flag: int = 0,
    ) -> None:
        self.topic: str = topic
        self.body: bytes = body.encode() if isinstance(body, str) else bytes(body)
        self.flag: int = flag
        self.properties: dict[str, str] = {_WAIT: "true"}
        if properties:
            self.properties.update(properties)
        if tags is not None:
            self.tags = tags
        if keys is not None:
            self.keys = keys
        if delay_level:
            self.delay_level = delay_level

    @property
    def tags(self) -> str | None:
        """The tag consumers filter on (``subscribe(topic, "tagA || tagB")``)."""
        return self.properties.get(_TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set(_TAGS, value)

    @property
    def keys(self) -> str | None:
        """Space-separated business keys, indexed by the broker."""
        return self.properties.get(_KEYS)

    @keys.setter
    def keys(self, value: str | Iterable[str] | None) -> None:
        if value is not None and not isinstance(value, str):
            value = " ".join(value)
        self._set(_KEYS, value)

    @property
    def delay_level(self) -> int:
        """Delay level (0 = none)."""
        return int(self.properties.get(_DELAY, "0"))

    @delay_level.setter
    def delay_level(self, value: int) -> None:
        if value < 0:
            raise ValueError(f"delay_level must be 0 (none) or a level 1-18, not {value}")
        self._set(_DELAY, str(value) if value else None)

    @property
    def sharding_key(self) -> str | None:
        """Ordering key used by :func:`rmq.client.producer.select_by_sharding_key`."""
        return self.properties.get(_SHARDING_KEY)

    @sharding_key.setter
    def sharding_key(self, value: str | None) -> None:
        self._set(_SHARDING_KEY, value)

    def _set(self, key: str, value: str | None) -> None:
        if value is None:
            self.properties.pop(key, None)
        else:
            self.properties[key] = value

    def __repr__(self) -> str:
        return (
            f"Message(topic={self.topic!r}, tags={self.tags!r}, keys={self.keys!r}, "
            f"body={len(self.body)} bytes)"
        )
