"""ACL test helpers (tests/test_sec_acl*.py): an ACL file, a broker started with it, and
requests signed as Java's ``AclClientRPCHook`` signs them, computed here with Python's ``hmac``
(tests only; the servers check with ``rmq_protocol::acl``)."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from helpers import TEST_STORE_CONF, BrokerProcess, free_port
from rmq._rmq import RemotingClient, RemotingResponse

ADMIN = ("rocketmq2", "12345678")
PUBLISHER = ("publisher", "pubsecret1")
SUB_ONLY = ("subonly1", "subsecret1")

ACL_TOPIC = "T_ACL"
ACL_GROUP = "G_ACL"

ACL_FILE = f"""\
globalWhiteRemoteAddresses:
  - 10.255.255.*
accounts:
  - accessKey: {ADMIN[0]}
    secretKey: {ADMIN[1]}
    whiteRemoteAddress:
    admin: true
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
  - accessKey: {PUBLISHER[0]}
    secretKey: {PUBLISHER[1]}
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - {ACL_TOPIC}=PUB|SUB
  - accessKey: {SUB_ONLY[0]}
    secretKey: {SUB_ONLY[1]}
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
"""


def sign(
    ext_fields: Mapping[str, str], body: bytes | None, account: tuple[str, str]
) -> dict[str, str]:
    """``ext_fields`` with ``AccessKey`` and ``Signature`` added: HMAC-SHA1 over the values in
    key order, then the body, Base64."""
    fields = {**ext_fields, "AccessKey": account[0]}
    content = "".join(fields[k] for k in sorted(fields)).encode() + (body or b"")
    mac = hmac.new(account[1].encode(), content, hashlib.sha1).digest()
    return {**fields, "Signature": base64.b64encode(mac).decode()}


def invoke_signed(
    client: RemotingClient,
    addr: str,
    code: int,
    ext_fields: Mapping[str, str] | None = None,
    body: bytes | None = None,
    account: tuple[str, str] = ADMIN,
) -> RemotingResponse:
    return client.invoke(addr, code, sign(ext_fields or {}, body, account), body)


def broker_conf(work: Path, port: int, acl_file: Path | None, ns_addr: str) -> Path:
    conf = work / "broker.conf"
    acl = f"aclEnable = true\naclFilePath = {acl_file}\n" if acl_file else ""
    conf.write_text(
        "brokerClusterName = DefaultCluster\n"
        "brokerName = broker-acl\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {work / 'store'}\n"
        f"namesrvAddr = {ns_addr}\n"
        "mappedFileSizeCommitLog = 16777216\n" + acl + TEST_STORE_CONF
    )
    return conf


@contextmanager
def acl_broker(
    work: Path, ns_addr: str, acl_text: str = ACL_FILE
) -> Iterator[tuple[str, Path, BrokerProcess]]:
    """A broker with ``aclEnable = true`` over an ACL file holding ``acl_text``; yields its
    address, the ACL file and the process."""
    work.mkdir(parents=True, exist_ok=True)
    acl_file = work / "plain_acl.yml"
    acl_file.write_text(acl_text)
    port = free_port()
    conf = broker_conf(work, port, acl_file, ns_addr)
    broker = BrokerProcess("-c", str(conf), cwd=work)
    try:
        broker.wait_for("listening on")
        yield f"127.0.0.1:{port}", acl_file, broker
    finally:
        broker.kill()
