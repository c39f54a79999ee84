"""ACL 1.0 sub-commands (mqadmin's ``acl`` group): create or update an account of a broker's
plain_acl.yml, delete one, show each broker's ACL config version, and replace the global white
list. Each sends one of the request codes 50-53 to ``-b`` one broker or ``-c`` a cluster's
brokers, with the header fields Java's ``MQClientAPIImpl`` sends; the broker must run with
``aclEnable=true`` and the tool must sign as an admin account (``--access-key``/``--secret-key``
or ``RMQ_ACCESS_KEY``/``RMQ_SECRET_KEY``).

Like mqadmin, a cluster-wide account or white-list change goes to every master and slave (each
broker keeps its own file); deletion and the version list go to the masters. Unlike mqadmin,
the account printed after an update never shows its secret key.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rmq.admin.client import Admin
from rmq.admin.command import arg, broker_or_cluster, subcommand
from rmq.admin.output import Result, date_time, parse_bool
from rmq.codes import RequestCode

REDACTED = "******"


def _all_addrs(admin: Admin, args: argparse.Namespace) -> list[str]:
    """``-b ADDR``, or every master and slave of ``-c CLUSTER`` (mqadmin's
    ``fetchMasterAndSlaveAddrByClusterName``)."""
    if args.brokerAddr:
        return [admin.broker_addr(args.brokerAddr.strip())]
    return sorted(
        addr
        for b in admin.cluster_info().brokers_of(args.clusterName.strip())
        for addr in b.addrs.values()
    )


def _perm_list(value: str | None) -> str | None:
    """``topicA=DENY,topicB=SUB`` with blanks dropped, as Java joins the list it split."""
    if value is None:
        return None
    return ",".join(p.strip() for p in value.strip().split(",") if p.strip())


@subcommand(
    "updateAclConfig",
    "Update acl config yaml file in broker",
    broker_or_cluster(
        "update acl config file to which broker", "update acl config file to which cluster"
    ),
    arg("-a", "--accessKey", required=True, help="set accessKey in acl config file"),
    arg("-s", "--secretKey", required=True, help="set secretKey in acl config file"),
    arg("-w", "--whiteRemoteAddress", help="set white ip Address for account in acl config file"),
    arg("-i", "--defaultTopicPerm", help="set default topicPerm in acl config file"),
    arg("-u", "--defaultGroupPerm", help="set default GroupPerm in acl config file"),
    arg("-t", "--topicPerms", help="set topicPerms list, eg: topicA=DENY,topicD=SUB"),
    arg("-g", "--groupPerms", help="set groupPerms list, eg: groupD=DENY,groupD=SUB"),
    arg(
        "-m",
        "--admin",
        type=parse_bool,
        metavar="true|false",
        help="set admin flag in acl config file",
    ),
)
def update_acl_config(admin: Admin, args: argparse.Namespace) -> Result:
    account: dict[str, str] = {
        "accessKey": args.accessKey.strip(),
        "secretKey": args.secretKey.strip(),
        # Java's header has a primitive boolean: always sent, false unless -m true.
        "admin": "true" if args.admin else "false",
    }
    optional = {
        "whiteRemoteAddress": args.whiteRemoteAddress,
        "defaultTopicPerm": args.defaultTopicPerm,
        "defaultGroupPerm": args.defaultGroupPerm,
    }
    account.update({k: v.strip() for k, v in optional.items() if v is not None})
    for key in ("topicPerms", "groupPerms"):
        joined = _perm_list(getattr(args, key))
        if joined is not None:
            account[key] = joined
    addrs = _all_addrs(admin, args)
    for addr in addrs:
        admin.broker(addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, account)
    shown = {**account, "secretKey": REDACTED}
    lines = [f"create or update plain access config to {addr} success." for addr in addrs]
    lines.append(json.dumps(shown, ensure_ascii=False))
    return Result({"brokers": addrs, "account": shown}, lines)


@subcommand(
    "deleteAclConfig",
    "Delete Acl Config Account in broker",
    broker_or_cluster(
        "delete acl config account to which broker", "delete acl config account to which cluster"
    ),
    arg(
        "-a",
        "--accessKey",
        required=True,
        help="set accessKey in acl config file for deleting which account",
    ),
)
def delete_acl_config(admin: Admin, args: argparse.Namespace) -> Result:
    access_key = args.accessKey.strip()
    addrs = admin.masters(args.brokerAddr, args.clusterName)
    for addr in addrs:
        admin.broker(addr, RequestCode.DELETE_ACL_CONFIG, {"accessKey": access_key})
    lines = [f"delete plain access config account to {addr} success." for addr in addrs]
    lines.append(f"account's accesskey is:{access_key}")
    return Result({"brokers": addrs, "accessKey": access_key}, lines)


# mqadmin 4.9 calls the same command deleteAccessConfig.
subcommand(
    "deleteAccessConfig",
    "Delete Acl Config Account in broker (mqadmin's name of deleteAclConfig)",
    broker_or_cluster(
        "delete acl config account to which broker", "delete acl config account to which cluster"
    ),
    arg("-a", "--accessKey", required=True, help="accessKey of the account to delete"),
)(delete_acl_config)


def _acl_version(admin: Admin, addr: str) -> dict[str, Any]:
    """GET_BROKER_CLUSTER_ACL_INFO: the answer's header fields, the version decoded."""
    resp = admin.broker(addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
    ext = resp.ext_fields
    try:
        version = json.loads(ext.get("version") or "{}")
    except ValueError:
        version = {}
    try:
        files = json.loads(ext.get("allAclFileVersion") or "{}")
    except ValueError:
        files = {}
    return {
        "clusterName": ext.get("clusterName", ""),
        "brokerName": ext.get("brokerName", ""),
        "brokerAddr": ext.get("brokerAddr", addr),
        "counter": int(version.get("counter") or 0),
        "timestamp": int(version.get("timestamp") or 0),
        "allAclFileVersion": files,
    }


@subcommand(
    "clusterAclConfigVersion",
    "List all of acl config version information in cluster",
    broker_or_cluster(
        "query acl config version for which broker",
        "query acl config version for specified cluster",
    ),
)
def cluster_acl_config_version(admin: Admin, args: argparse.Namespace) -> Result:
    addrs = admin.masters(args.brokerAddr, args.clusterName)
    infos = [_acl_version(admin, addr) for addr in addrs]
    fmt = "{:<16}  {:<22}  {:<22}  {:<20}  {:<22}"
    lines = []
    if not args.brokerAddr:
        lines.append(
            fmt.format(
                "#Cluster Name",
                "#Broker Name",
                "#Broker Addr",
                "#AclConfigVersionNum",
                "#AclLastUpdateTime",
            )
        )
    for i in infos:
        lines.append(
            fmt.format(
                i["clusterName"],
                i["brokerName"],
                i["brokerAddr"],
                i["counter"],
                date_time(i["timestamp"]),
            ).rstrip()
        )
    lines.append(
        "get broker's plain access config version success."
        if args.brokerAddr
        else "get cluster's plain access config version success."
    )
    return Result(infos[0] if args.brokerAddr else {"brokers": infos}, lines)


@subcommand(
    "updateGlobalWhiteAddr",
    "Update global white address for acl Config File in broker",
    broker_or_cluster(
        "update global white address to which broker",
        "update global white address to which cluster",
    ),
    arg(
        "-g",
        "--globalWhiteRemoteAddresses",
        required=True,
        help="set globalWhiteRemoteAddress list, eg: 10.10.103.*,192.168.0.*",
    ),
)
def update_global_white_addr(admin: Admin, args: argparse.Namespace) -> Result:
    addresses = args.globalWhiteRemoteAddresses.strip()
    addrs = _all_addrs(admin, args)
    for addr in addrs:
        admin.broker(
            addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": addresses}
        )
    lines = [f"update global white remote addresses to {addr} success." for addr in addrs]
    return Result({"brokers": addrs, "globalWhiteAddrs": addresses}, lines)
