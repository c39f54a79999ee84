"""The sub-commands, grouped as mqadmin groups them. Importing a module registers its
sub-commands; a new group of sub-commands is one more module and one more import here."""

from __future__ import annotations

from . import broker, consumer, ha, message, namesrv, produce, topic

__all__ = ["broker", "consumer", "ha", "message", "namesrv", "produce", "topic"]
