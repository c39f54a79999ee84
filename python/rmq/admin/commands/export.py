"""``exportMetadata``: the user topics and subscription groups of a broker or a cluster's
masters written to a JSON file, as mqadmin writes them (system topics, as the broker lists
them, and RocketMQ's built-in groups left out; retry and DLQ topics only with ``-s``)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from rmq._rmq import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rmq.admin.client import Admin, AdminError
from rmq.admin.command import arg, one_of, subcommand
from rmq.admin.output import Result
from rmq.codes import RequestCode

__all__: list[str] = []

SYS_GROUP_PREFIX = "CID_RMQ_SYS_"
"""RocketMQ's ``MixAll.CID_RMQ_SYS_PREFIX``: groups named so are the system's."""
BUILT_IN_GROUPS = frozenset(
    [
        "DEFAULT_CONSUMER",
        "DEFAULT_PRODUCER",
        "TOOLS_CONSUMER",
        "FILTERSRV_CONSUMER",
        "__MONITOR_CONSUMER",
        "CLIENT_INNER_PRODUCER",
        "SELF_TEST_P_GROUP",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_ONSAPI_PULL",
    ]
)
"""The groups mqadmin's admin client leaves out of exports (``DefaultMQAdminExtImpl
.SYSTEM_GROUP_SET``, the client's list: those with the system prefix go by that)."""


def user_topics(admin: Admin, addr: str, special: bool) -> dict[str, Any]:
    """GET_ALL_TOPIC_CONFIG without the broker's system topics (and without retry and DLQ
    topics unless ``special``): the ``TopicConfigSerializeWrapper``."""
    wrapper = admin.broker_json(addr, RequestCode.GET_ALL_TOPIC_CONFIG)
    system = set(
        admin.broker_json(addr, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER).get("topicList")
        or ()
    )
    special_prefixes = () if special else (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)
    table = {
        name: config
        for name, config in (wrapper.get("topicConfigTable") or {}).items()
        if name not in system and not (special_prefixes and name.startswith(special_prefixes))
    }
    return {**wrapper, "topicConfigTable": table}


def user_groups(admin: Admin, addr: str) -> dict[str, Any]:
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG without the built-in groups."""
    wrapper = admin.broker_json(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    table = {
        name: config
        for name, config in (wrapper.get("subscriptionGroupTable") or {}).items()
        if not name.startswith(SYS_GROUP_PREFIX) and name not in BUILT_IN_GROUPS
    }
    return {**wrapper, "subscriptionGroupTable": table}


def _write(path: Path, document: Any) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", "utf-8")
    except OSError as exc:
        raise AdminError(f"cannot write {path}: {exc.strerror} — choose another -f") from None


@subcommand(
    "exportMetadata",
    "export metadata",
    one_of(
        arg("-c", "--clusterName", metavar="CLUSTER", help="merge every master of this"),
        arg("-b", "--brokerAddr", metavar="ADDR", help="one broker (with -t or -g)"),
    ),
    arg(
        "-f",
        "--filePath",
        default="/tmp/rocketmq/export",
        help="directory to write to (default: /tmp/rocketmq/export)",
    ),
    arg("-t", "--topic", action="store_true", help="only topics (topic.json)"),
    arg("-g", "--subscriptionGroup", action="store_true", help="only groups"),
    arg("-s", "--specialTopic", action="store_true", help="keep retry and DLQ topics"),
)
def export_metadata(admin: Admin, args: argparse.Namespace) -> Result:
    directory = Path(args.filePath.strip())
    if args.brokerAddr:
        addr = admin.broker_addr(args.brokerAddr)
        if args.topic:
            path, document = directory / "topic.json", user_topics(admin, addr, args.specialTopic)
        elif args.subscriptionGroup:
            path, document = directory / "subscriptionGroup.json", user_groups(admin, addr)
        else:
            raise AdminError("with -b, choose what to export: -t (topics) or -g (groups)")
        _write(path, document)
        return Result({"path": str(path), **document}, [f"export {path} success"])
    topics: dict[str, dict[str, Any]] = {}
    groups: dict[str, dict[str, Any]] = {}
    for addr in admin.masters(None, args.clusterName):
        for name, config in user_topics(admin, addr, args.specialTopic)["topicConfigTable"].items():
            if name in topics:  # the cluster's queues: the sum over its brokers
                for key in ("readQueueNums", "writeQueueNums"):
                    config[key] = int(config.get(key, 0)) + int(topics[name].get(key, 0))
            topics[name] = config
        for name, config in user_groups(admin, addr)["subscriptionGroupTable"].items():
            if name in groups:
                key = "retryQueueNums"
                config[key] = int(config.get(key, 0)) + int(groups[name].get(key, 0))
            groups[name] = config
    result: dict[str, Any] = {}
    if args.topic:
        result["topicConfigTable"], path = topics, directory / "topic.json"
    elif args.subscriptionGroup:
        result["subscriptionGroupTable"], path = groups, directory / "subscriptionGroup.json"
    else:
        result = {"topicConfigTable": topics, "subscriptionGroupTable": groups}
        path = directory / "metadata.json"
    result["exportTime"] = int(time.time() * 1000)
    _write(path, result)
    return Result({"path": str(path), **result}, [f"export {path} success"])
