"""The sub-command registry: a sub-command is one decorated function.

::

    @subcommand("topicRoute", "Examine topic route info",
                arg("-t", "--topic", required=True, help="topic name"))
    def topic_route(admin: Admin, args: argparse.Namespace) -> Result:
        ...

The decorator records the name (mqadmin's), the one-line summary and the argparse options;
:mod:`rmq.admin.cli` builds one sub-parser per entry. A module of sub-commands only has to be
imported by :mod:`rmq.admin.commands` to appear in ``rmq --help``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rmq.admin.client import Admin
from rmq.admin.output import Result

__all__ = [
    "MQADMIN_COMMANDS",
    "REGISTRY",
    "Arg",
    "OneOf",
    "RunFn",
    "SubCommand",
    "arg",
    "one_of",
    "subcommand",
]

#: Apache RocketMQ 4.9.7's mqadmin sub-commands (``MQAdminStartup.initCommand``) and two of
#: 5.x's (``haStatus``, ``setConsumeMode``), so that a name rmq does not have yet is told apart
#: from a typo. (``DecodeMessageId`` is a class mqadmin never registers; rmq's
#: ``decodeMessageId`` is its own.)
MQADMIN_COMMANDS: frozenset[str] = frozenset(
    [
        "updateTopic",
        "deleteTopic",
        "updateSubGroup",
        "deleteSubGroup",
        "updateBrokerConfig",
        "updateTopicPerm",
        "topicRoute",
        "topicStatus",
        "topicClusterList",
        "brokerStatus",
        "queryMsgById",
        "queryMsgByKey",
        "queryMsgByUniqueKey",
        "queryMsgByOffset",
        "queryMsgTraceById",
        "printMsg",
        "printMsgByQueue",
        "sendMsgStatus",
        "brokerConsumeStats",
        "producerConnection",
        "consumerConnection",
        "consumerProgress",
        "consumerStatus",
        "cloneGroupOffset",
        "clusterList",
        "topicList",
        "updateKvConfig",
        "deleteKvConfig",
        "wipeWritePerm",
        "addWritePerm",
        "resetOffsetByTime",
        "updateOrderConf",
        "cleanExpiredCQ",
        "cleanUnusedTopic",
        "startMonitoring",
        "statsAll",
        "allocateMQ",
        "checkMsgSendRT",
        "clusterRT",
        "getNamesrvConfig",
        "updateNamesrvConfig",
        "getBrokerConfig",
        "queryCq",
        "sendMessage",
        "consumeMessage",
        "updateAclConfig",
        "deleteAclConfig",
        "clusterAclConfigVersion",
        "updateGlobalWhiteAddr",
        "getAclConfig",
        "producer",
        "consumer",
        "exportMetadata",
        "exportConfigs",
        "exportMetrics",
        "deleteExpiredCommitLog",
        "getConsumerConfig",
        "skipAccumulatedMessage",
        "setConsumeMode",
        "haStatus",
    ]
)

RunFn = Callable[[Admin, argparse.Namespace], Result]


@dataclass(frozen=True, slots=True)
class Arg:
    """One ``add_argument`` call."""

    flags: tuple[str, ...]
    options: dict[str, Any]

    def add_to(self, parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup) -> None:
        parser.add_argument(*self.flags, **self.options)


@dataclass(frozen=True, slots=True)
class OneOf:
    """Options of which exactly one (``required``) or at most one may be given, like
    mqadmin's ``-b brokerAddr | -c clusterName``."""

    args: tuple[Arg, ...]
    required: bool


def arg(*flags: str, **options: Any) -> Arg:
    """An option, with :meth:`argparse.ArgumentParser.add_argument`'s parameters."""
    return Arg(flags, options)


def one_of(*args: Arg, required: bool = True) -> OneOf:
    return OneOf(args, required)


def broker_or_cluster(broker_help: str, cluster_help: str) -> OneOf:
    """``-b/--brokerAddr ADDR`` or ``-c/--clusterName CLUSTER`` (one of them required): the one
    broker a command acts on, or every broker (master) of a cluster."""
    return one_of(
        arg("-b", "--brokerAddr", metavar="ADDR", help=broker_help),
        arg("-c", "--clusterName", metavar="CLUSTER", help=cluster_help),
    )


@dataclass(frozen=True, slots=True)
class SubCommand:
    name: str
    summary: str
    args: tuple[Arg | OneOf, ...]
    run: RunFn

    def configure(self, parser: argparse.ArgumentParser) -> None:
        for a in self.args:
            if isinstance(a, OneOf):
                group = parser.add_mutually_exclusive_group(required=a.required)
                for member in a.args:
                    member.add_to(group)
            else:
                a.add_to(parser)


REGISTRY: dict[str, SubCommand] = {}
"""Sub-commands by name, in registration order."""


def subcommand(name: str, summary: str, *args: Arg | OneOf) -> Callable[[RunFn], RunFn]:
    """Register the decorated function as sub-command ``name``."""

    def register(run: RunFn) -> RunFn:
        if name in REGISTRY:
            raise ValueError(f"sub-command {name!r} is registered twice")
        REGISTRY[name] = SubCommand(name, summary, args, run)
        return run

    return register
