"""Read the JSON that RocketMQ brokers and nameservers write (fastjson's dialect).

Java RocketMQ serializes bodies with fastjson, which is not always standard JSON: maps with
non-string keys get bare keys (``{0:"127.0.0.1:10911"}``, BrokerData from nameservers older
than 4.9.4) and maps keyed by an object get the object itself as the key
(``{{"brokerName":"b","queueId":0,"topic":"T"}:{…}}``, ConsumeStats and TopicStatsTable).
fastjson also accepts single-quoted strings. The admin tool and the nameserver talk to rmq and
to Java peers, so they read both: standard JSON goes through :func:`json.loads` untouched,
anything else through the small reader below, which turns every key into a string (an object
or array key becomes its compact JSON text, the form ``crates/rmq-protocol`` uses too).
:func:`message_queue_key` turns such a key back into a :class:`MessageQueue`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rmq.client.message_queue import MessageQueue

__all__ = ["FastjsonError", "loads", "message_queue_key"]

MAX_DEPTH = 256
"""Deeper nesting is refused (no RocketMQ body nests more than a few levels)."""

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_BARE_KEY = re.compile(r"[^\s:,{}\[\]\"']+")
_WS = re.compile(r"\s*")


class FastjsonError(ValueError):
    """Text that is not JSON in either dialect."""


def loads(data: bytes | str) -> Any:
    """Parse a JSON body from a RocketMQ peer, standard or fastjson-flavoured."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        return json.loads(text)
    except ValueError:
        pass
    return _Reader(text).document()


def message_queue_key(key: str) -> MessageQueue:
    """The MessageQueue of a map key as :func:`loads` leaves it (its JSON text)."""
    try:
        d = json.loads(key)
        return MessageQueue(str(d["topic"]), str(d["brokerName"]), int(d["queueId"]))
    except (ValueError, TypeError, KeyError) as exc:
        raise FastjsonError(f"not a MessageQueue key: {key!r}") from exc


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


class _Reader:
    """A recursive-descent reader for the fastjson dialect described in the module docs."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.pos = 0

    def fail(self, what: str) -> FastjsonError:
        near = self.s[self.pos : self.pos + 20]
        return FastjsonError(f"{what} at character {self.pos} (near {near!r})")

    def ws(self) -> None:
        m = _WS.match(self.s, self.pos)
        if m:
            self.pos = m.end()

    def peek(self) -> str:
        if self.pos >= len(self.s):
            raise self.fail("unexpected end of JSON")
        return self.s[self.pos]

    def document(self) -> Any:
        value = self.value(0)
        self.ws()
        if self.pos != len(self.s):
            raise self.fail("extra data after the JSON value")
        return value

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail("JSON nested too deeply")
        self.ws()
        c = self.peek()
        if c == "{":
            return self.obj(depth + 1)
        if c == "[":
            return self.array(depth + 1)
        if c == '"':
            return self.dq_string()
        if c == "'":
            return self.sq_string()
        for word, v in (("true", True), ("false", False), ("null", None)):
            if self.s.startswith(word, self.pos):
                self.pos += len(word)
                return v
        m = _NUMBER.match(self.s, self.pos)
        if not m:
            raise self.fail("expected a JSON value")
        self.pos = m.end()
        token = m.group()
        return float(token) if any(ch in token for ch in ".eE") else int(token)

    def key(self, depth: int) -> str:
        c = self.peek()
        if c == '"':
            return self.dq_string()
        if c == "'":
            return self.sq_string()
        if c in "{[":
            return _compact(self.value(depth))
        m = _BARE_KEY.match(self.s, self.pos)
        if not m:
            raise self.fail("expected an object key")
        self.pos = m.end()
        return m.group()

    def obj(self, depth: int) -> dict[str, Any]:
        self.pos += 1  # '{'
        out: dict[str, Any] = {}
        self.ws()
        if self.peek() == "}":
            self.pos += 1
            return out
        while True:
            self.ws()
            k = self.key(depth)
            self.ws()
            if self.peek() != ":":
                raise self.fail("expected ':'")
            self.pos += 1
            out[k] = self.value(depth)
            self.ws()
            c = self.peek()
            self.pos += 1
            if c == "}":
                return out
            if c != ",":
                self.pos -= 1
                raise self.fail("expected ',' or '}'")

    def array(self, depth: int) -> list[Any]:
        self.pos += 1  # '['
        out: list[Any] = []
        self.ws()
        if self.peek() == "]":
            self.pos += 1
            return out
        while True:
            out.append(self.value(depth))
            self.ws()
            c = self.peek()
            self.pos += 1
            if c == "]":
                return out
            if c != ",":
                self.pos -= 1
                raise self.fail("expected ',' or ']'")

    def dq_string(self) -> str:
        try:
            value, end = json.decoder.scanstring(self.s, self.pos + 1)  # type: ignore[attr-defined]
        except ValueError as exc:
            raise self.fail(f"bad string ({exc})") from None
        self.pos = end
        return str(value)

    def sq_string(self) -> str:
        # Re-quote the body and let the standard decoder handle the escapes.
        i = self.pos + 1
        chars: list[str] = []
        while i < len(self.s):
            c = self.s[i]
            if c == "\\" and i + 1 < len(self.s):
                nxt = self.s[i + 1]
                chars.append(nxt if nxt == "'" else c + nxt)
                i += 2
                continue
            if c == "'":
                break
            chars.append('\\"' if c == '"' else c)
            i += 1
        else:
            raise self.fail("unterminated string")
        self.pos = i + 1
        try:
            return str(json.loads('"' + "".join(chars) + '"'))
        except ValueError as exc:
            raise self.fail(f"bad string ({exc})") from None
