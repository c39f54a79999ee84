"""RocketMQ request and response codes as :class:`enum.IntEnum`\\ s. They are built by the
native module from the Rust protocol tables (``crates/rmq-protocol/src/code.rs``), the one
place a code is written; this module only gives them their usual import path."""

from __future__ import annotations

from rmq._rmq import RequestCode, ResponseCode

__all__ = ["RequestCode", "ResponseCode"]
