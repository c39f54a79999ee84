"""Nameserver sub-commands: its configuration and KV config, and taking a broker's write
permission away before maintenance and giving it back (``wipeWritePerm`` / ``addWritePerm``)."""

from __future__ import annotations

import argparse

from rmq.admin.client import Admin
from rmq.admin.command import arg, subcommand
from rmq.admin.output import Result
from rmq.codes import RequestCode
from rmq.config import parse_properties


@subcommand("getNamesrvConfig", "Get configs of name server.")
def get_namesrv_config(admin: Admin, args: argparse.Namespace) -> Result:
    configs: dict[str, dict[str, str]] = {}
    lines: list[str] = []
    for addr, resp in admin.every_namesrv(RequestCode.GET_NAMESRV_CONFIG):
        config = dict(sorted(parse_properties((resp.body or b"").decode("utf-8")).items()))
        configs[addr] = config
        lines.append(f"============{addr}============")
        width = max((len(k) for k in config), default=0)
        lines.extend(f"{k:<{width}} = {v}" for k, v in config.items())
    return Result(configs, lines)


def _write_perm(admin: Admin, code: int, broker_name: str, count_key: str, verb: str) -> Result:
    counts: dict[str, int] = {}
    for addr, resp in admin.every_namesrv(code, {"brokerName": broker_name}):
        counts[addr] = int(resp.ext_fields.get(count_key, "0"))
    lines = [
        f"{verb} write perm of broker[{broker_name}] in name server[{addr}] OK, {n}"
        for addr, n in counts.items()
    ]
    return Result({"brokerName": broker_name, count_key: counts}, lines)


@subcommand(
    "wipeWritePerm",
    "Wipe write perm of broker in all name server",
    arg("-b", "--brokerName", required=True, help="broker name"),
)
def wipe_write_perm(admin: Admin, args: argparse.Namespace) -> Result:
    return _write_perm(
        admin,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        args.brokerName.strip(),
        "wipeTopicCount",
        "wipe",
    )


@subcommand(
    "addWritePerm",
    "Add write perm of broker in all name server",
    arg("-b", "--brokerName", required=True, help="broker name"),
)
def add_write_perm(admin: Admin, args: argparse.Namespace) -> Result:
    return _write_perm(
        admin, RequestCode.ADD_WRITE_PERM_OF_BROKER, args.brokerName.strip(), "addTopicCount", "add"
    )


@subcommand(
    "updateNamesrvConfig",
    "Update configs of name server.",
    arg("-k", "--key", required=True, help="config key"),
    arg("-v", "--value", required=True, help="config value"),
)
def update_namesrv_config(admin: Admin, args: argparse.Namespace) -> Result:
    key, value = args.key.strip(), args.value.strip()
    body = f"{key}={value}\n".encode()
    updated = [
        addr for addr, _ in admin.every_namesrv(RequestCode.UPDATE_NAMESRV_CONFIG, body=body)
    ]
    servers = f"[{', '.join(updated)}]"
    return Result(
        {"namesrv": updated, "key": key, "value": value},
        [f"update name server config success!{servers}", f"{key} : {value}"],
    )


@subcommand(
    "updateKvConfig",
    "Create or update KV config.",
    arg("-s", "--namespace", required=True, help="set the namespace"),
    arg("-k", "--key", required=True, help="set the key name"),
    arg("-v", "--value", required=True, help="set the key value"),
)
def update_kv_config(admin: Admin, args: argparse.Namespace) -> Result:
    ext = {"namespace": args.namespace.strip(), "key": args.key.strip()}
    ext["value"] = args.value.strip()
    updated = [addr for addr, _ in admin.every_namesrv(RequestCode.PUT_KV_CONFIG, ext)]
    return Result({**ext, "namesrv": updated}, ["create or update kv config to namespace success."])


@subcommand(
    "deleteKvConfig",
    "Delete KV config.",
    arg("-s", "--namespace", required=True, help="set the namespace"),
    arg("-k", "--key", required=True, help="set the key name"),
)
def delete_kv_config(admin: Admin, args: argparse.Namespace) -> Result:
    ext = {"namespace": args.namespace.strip(), "key": args.key.strip()}
    updated = [addr for addr, _ in admin.every_namesrv(RequestCode.DELETE_KV_CONFIG, ext)]
    return Result({**ext, "namesrv": updated}, ["delete kv config from namespace success."])
