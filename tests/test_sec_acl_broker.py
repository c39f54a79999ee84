"""ACL 1.0 on the broker (``aclEnable = true``): every request class (send, pull,
heartbeat/offsets, admin) refused with NO_PERMISSION when unsigned, signed with a wrong secret,
tampered after signing (body or header) or from an address that is not white-listed, with
nothing stored; permissions (SUB-only cannot send, non-admins cannot create topics, reset
offsets, change config or delete groups); the ACL admin codes 50-53; the file's reload and its
errors at start-up. Requests are built and signed here (``sec_acl_helpers.sign``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import (
    BrokerProcess,
    create_topic_header,
    free_port,
    pull_header,
    send_v2_header,
    update_offset_header,
)
from rmq._rmq import RemotingClient
from rmq.codes import RequestCode, ResponseCode
from sec_acl_helpers import (
    ACL_FILE,
    ACL_GROUP,
    ACL_TOPIC,
    ADMIN,
    PUBLISHER,
    SUB_ONLY,
    acl_broker,
    broker_conf,
    invoke_signed,
    sign,
)

NO_PERMISSION = ResponseCode.NO_PERMISSION


@pytest.fixture(scope="module")
def broker(
    tmp_path_factory: pytest.TempPathFactory, module_namesrv: tuple[object, str]
) -> Iterator[tuple[str, Path, BrokerProcess]]:
    _, ns_addr = module_namesrv
    with acl_broker(tmp_path_factory.mktemp("acl-broker"), ns_addr) as started:
        addr = started[0]
        client = RemotingClient()
        try:
            r = invoke_signed(
                client, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic_header(ACL_TOPIC, 1)
            )
            assert r.code == 0, r.remark
        finally:
            client.close()
        yield started


@pytest.fixture
def client() -> Iterator[RemotingClient]:
    c = RemotingClient()
    yield c
    c.close()


def max_offset(client: RemotingClient, addr: str) -> int:
    """The CommitLog's end: any stored message moves it at once."""
    r = invoke_signed(client, addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    assert r.code == 0, r.remark
    return int(json.loads(r.body or b"{}")["table"]["commitLogMaxOffset"])


def committed_offset(client: RemotingClient, addr: str) -> int:
    header = {"consumerGroup": ACL_GROUP, "topic": ACL_TOPIC, "queueId": "0"}
    r = invoke_signed(client, addr, RequestCode.QUERY_CONSUMER_OFFSET, header)
    return int(r.ext_fields["offset"]) if r.code == 0 else -1


def topics(client: RemotingClient, addr: str) -> set[str]:
    r = invoke_signed(client, addr, RequestCode.GET_ALL_TOPIC_CONFIG)
    assert r.code == 0, r.remark
    return set(json.loads(r.body or b"{}")["topicConfigTable"])


def heartbeat_body(group: str, topic: str) -> bytes:
    return json.dumps(
        {
            "clientID": "127.0.0.1@acl-test",
            "producerDataSet": [],
            "consumerDataSet": [
                {
                    "groupName": group,
                    "consumeType": "CONSUME_PASSIVELY",
                    "messageModel": "CLUSTERING",
                    "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
                    "unitMode": False,
                    "subscriptionDataSet": [
                        {
                            "topic": topic,
                            "subString": "*",
                            "tagsSet": [],
                            "codeSet": [],
                            "subVersion": 1,
                            "expressionType": "TAG",
                            "classFilterMode": False,
                        }
                    ],
                }
            ],
        }
    ).encode()


# One request of each class: (code, header, body, the account allowed to make it)
REQUESTS = {
    "send": (
        RequestCode.SEND_MESSAGE_V2,
        send_v2_header("PG_ACL", ACL_TOPIC, "t", "k"),
        b"payload",
        PUBLISHER,
    ),
    "pull": (RequestCode.PULL_MESSAGE, pull_header(ACL_GROUP, ACL_TOPIC), None, PUBLISHER),
    "heartbeat": (RequestCode.HEART_BEAT, {}, heartbeat_body(ACL_GROUP, ACL_TOPIC), PUBLISHER),
    "offset": (
        RequestCode.UPDATE_CONSUMER_OFFSET,
        update_offset_header(ACL_GROUP, ACL_TOPIC, 0, 1),
        None,
        PUBLISHER,
    ),
    "admin": (
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        create_topic_header("T_ACL_NEW", 1),
        None,
        ADMIN,
    ),
}


def bad_variants(
    header: dict[str, str], body: bytes | None, account: tuple[str, str]
) -> dict[str, tuple[dict[str, str], bytes | None, str]]:
    """Each way of getting it wrong, with a part of the remark it must get."""
    signed = sign(header, body, account)
    some_key = sorted(header)[0] if header else "AccessKey"
    tampered_header = {**signed, some_key: signed[some_key] + "x"} if header else None
    out = {
        "unsigned": (dict(header), body, "carries no AccessKey"),
        "wrong secret": (sign(header, body, (account[0], "not-the-secret")), body, "signature"),
        "tampered body": (signed, (body or b"") + b"!", "signature"),
    }
    if tampered_header is not None:
        out["tampered header"] = (tampered_header, body, "signature")
    return out


@pytest.mark.parametrize("kind", sorted(REQUESTS))
def test_each_request_class_is_refused_and_nothing_is_stored(
    broker: tuple[str, Path, BrokerProcess], client: RemotingClient, kind: str
) -> None:
    addr = broker[0]
    code, header, body, account = REQUESTS[kind]
    before = (max_offset(client, addr), committed_offset(client, addr), topics(client, addr))
    for variant, (fields, sent_body, remark) in bad_variants(header, body, account).items():
        r = client.invoke(addr, code, fields, sent_body)
        assert r.code == NO_PERMISSION, f"{kind}/{variant}: {r.code} {r.remark}"
        assert remark in (r.remark or ""), f"{kind}/{variant}: {r.remark}"
        assert account[1] not in (r.remark or "")
    # The connection stayed open and nothing changed.
    after = (max_offset(client, addr), committed_offset(client, addr), topics(client, addr))
    assert after == before
    if kind == "admin":
        assert "T_ACL_NEW" not in after[2]
    # Signed correctly, the same request goes through.
    r = invoke_signed(client, addr, code, header, body, account)
    assert r.code in (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND), (kind, r.code, r.remark)


def test_sends_are_stored_only_when_allowed(
    broker: tuple[str, Path, BrokerProcess], client: RemotingClient
) -> None:
    addr = broker[0]
    header = send_v2_header("PG_ACL", ACL_TOPIC, "t", "k")
    before = max_offset(client, addr)
    r = invoke_signed(client, addr, RequestCode.SEND_MESSAGE_V2, header, b"ok", PUBLISHER)
    assert r.code == 0, r.remark
    r = invoke_signed(client, addr, RequestCode.SEND_MESSAGE_V2, header, b"no", SUB_ONLY)
    assert r.code == NO_PERMISSION
    assert r.remark == f"account '{SUB_ONLY[0]}' has no PUB permission on topic '{ACL_TOPIC}'"
    other = send_v2_header("PG_ACL", "T_OTHER", "t", "k")
    r = invoke_signed(client, addr, RequestCode.SEND_MESSAGE_V2, other, b"no", PUBLISHER)
    assert r.code == NO_PERMISSION
    assert r.remark == f"account '{PUBLISHER[0]}' has no PUB permission on topic 'T_OTHER'"
    assert max_offset(client, addr) > before
    after_one = max_offset(client, addr)
    r = invoke_signed(client, addr, RequestCode.SEND_MESSAGE_V2, header, b"no", SUB_ONLY)
    assert r.code == NO_PERMISSION
    assert max_offset(client, addr) == after_one


NON_ADMIN_CODES = {
    "create topic": (RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic_header("T_X", 1), None),
    "reset offsets": (
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        {"topic": ACL_TOPIC, "group": ACL_GROUP, "timestamp": "0", "isForce": "true"},
        None,
    ),
    "change config": (RequestCode.UPDATE_BROKER_CONFIG, {}, b"brokerPermission=4\n"),
    "delete group": (
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
        {"groupName": ACL_GROUP, "removeOffset": "true"},
        None,
    ),
    "delete topic": (RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": ACL_TOPIC}, None),
    "acl edit": (
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
        {"accessKey": PUBLISHER[0], "secretKey": "12345678", "admin": "true"},
        None,
    ),
}


@pytest.mark.parametrize("what", sorted(NON_ADMIN_CODES))
def test_admin_codes_need_an_admin(
    broker: tuple[str, Path, BrokerProcess], client: RemotingClient, what: str
) -> None:
    addr = broker[0]
    code, header, body = NON_ADMIN_CODES[what]
    before = (topics(client, addr), committed_offset(client, addr))
    r = invoke_signed(client, addr, code, header, body, PUBLISHER)
    assert r.code == NO_PERMISSION, (what, r.code, r.remark)
    assert f"account '{PUBLISHER[0]}' is not an admin" in (r.remark or ""), r.remark
    assert (topics(client, addr), committed_offset(client, addr)) == before
    rt = invoke_signed(client, addr, RequestCode.GET_BROKER_CONFIG)
    assert b"brokerPermission=6" in (rt.body or b""), "the config did not change"


def test_acl_admin_codes_edit_the_file(
    broker: tuple[str, Path, BrokerProcess], client: RemotingClient
) -> None:
    addr, acl_file, _ = broker
    newbie = ("newbie01", "newbiesecret")
    header = send_v2_header("PG_ACL", ACL_TOPIC, "t", "k")
    r = invoke_signed(client, addr, RequestCode.SEND_MESSAGE_V2, header, b"x", newbie)
    assert r.code == NO_PERMISSION and "not known" in (r.remark or "")
    version = invoke_signed(client, addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
    assert version.code == 0, version.remark
    counter = json.loads(version.ext_fields["version"])["counter"]
    assert version.ext_fields["brokerName"] == "broker-acl"
    assert version.ext_fields["brokerAddr"] == addr
    update = {
        "accessKey": newbie[0],
        "secretKey": newbie[1],
        "admin": "false",
        "defaultTopicPerm": "PUB",
        "defaultGroupPerm": "SUB",
        "topicPerms": f"{ACL_TOPIC}=PUB,T_DENIED=DENY",
        "groupPerms": "",
    }
    r = invoke_signed(client, addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, update)
    assert r.code == 0, r.remark
    r = invoke_signed(client, addr, RequestCode.SEND_MESSAGE_V2, header, b"x", newbie)
    assert r.code == 0, r.remark
    text = acl_file.read_text()
    assert "newbie01" in text and "T_DENIED=DENY" in text
    version = invoke_signed(client, addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
    assert json.loads(version.ext_fields["version"])["counter"] == counter + 1
    # A bad permission is refused with RocketMQ's failure code, the file unchanged.
    bad = {**update, "topicPerms": "T=WRITE"}
    r = invoke_signed(client, addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, bad)
    assert r.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
    assert "'WRITE' is not a permission" in (r.remark or "")
    assert acl_file.read_text() == text
    r = invoke_signed(client, addr, RequestCode.DELETE_ACL_CONFIG, {"accessKey": newbie[0]})
    assert r.code == 0, r.remark
    r = invoke_signed(client, addr, RequestCode.SEND_MESSAGE_V2, header, b"x", newbie)
    assert r.code == NO_PERMISSION
    r = invoke_signed(client, addr, RequestCode.DELETE_ACL_CONFIG, {"accessKey": newbie[0]})
    assert r.code == ResponseCode.DELETE_ACL_CONFIG_FAILED
    # The global white list: 127.0.0.1 in it lets unsigned requests through.
    white = {"globalWhiteAddrs": "10.255.255.*,127.0.0.1", "aclFileFullPath": str(acl_file)}
    r = invoke_signed(client, addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, white)
    assert r.code == 0, r.remark
    r = client.invoke(addr, RequestCode.GET_MAX_OFFSET, {"topic": ACL_TOPIC, "queueId": "0"})
    assert r.code == 0, r.remark
    white = {"globalWhiteAddrs": "10.255.255.*", "aclFileFullPath": ""}
    r = invoke_signed(client, addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, white)
    assert r.code == 0, r.remark
    r = client.invoke(addr, RequestCode.GET_MAX_OFFSET, {"topic": ACL_TOPIC, "queueId": "0"})
    assert r.code == NO_PERMISSION


def wait_for_code(client: RemotingClient, addr: str, code: int, what: str) -> None:
    deadline = time.monotonic() + 20
    while True:
        r = client.invoke(addr, RequestCode.GET_MAX_OFFSET, {"topic": ACL_TOPIC, "queueId": "0"})
        if r.code == code:
            return
        assert time.monotonic() < deadline, f"{what}: still {r.code} {r.remark}"
        time.sleep(0.1)


def test_reload_applies_good_changes_and_keeps_the_rules_on_bad_ones(
    tmp_path: Path, module_namesrv: tuple[object, str], client: RemotingClient
) -> None:
    with acl_broker(tmp_path / "b", module_namesrv[1]) as (addr, acl_file, proc):
        unsigned = client.invoke(
            addr, RequestCode.GET_MAX_OFFSET, {"topic": ACL_TOPIC, "queueId": "0"}
        )
        assert unsigned.code == NO_PERMISSION
        white = ACL_FILE.replace("  - 10.255.255.*\n", "  - 10.255.255.*\n  - 127.0.0.1\n")
        acl_file.write_text(white)
        wait_for_code(client, addr, ResponseCode.SUCCESS, "the white list was not applied")
        broken = white.replace("defaultTopicPerm: SUB\n", "defaultTopicPerm: SUBSCRIBE\n")
        acl_file.write_text(broken)
        line = proc.wait_for("bad ACL file")
        n = broken.splitlines().index("    defaultTopicPerm: SUBSCRIBE") + 1
        assert f"{acl_file}:{n}: key accounts[2].defaultTopicPerm" in line, line
        assert "SUBSCRIBE" in line and "rules in force stay" in line, line
        # the old rules (with the white list) are still in force
        time.sleep(1.5)
        wait_for_code(client, addr, ResponseCode.SUCCESS, "the old rules were dropped")
        acl_file.write_text(ACL_FILE)
        wait_for_code(client, addr, NO_PERMISSION, "the fixed file was not applied")


def start_failure(work: Path, acl_text: str | None, ns_addr: str) -> str:
    work.mkdir(parents=True, exist_ok=True)
    acl_file = work / "plain_acl.yml"
    if acl_text is not None:
        acl_file.write_text(acl_text)
    conf = broker_conf(work, free_port(), acl_file, ns_addr)
    proc = BrokerProcess("-c", str(conf), cwd=work)
    code = proc.finish()
    assert code != 0, proc.log
    return proc.log


def test_a_malformed_file_stops_the_start_naming_file_line_and_key(
    tmp_path: Path, module_namesrv: tuple[object, str]
) -> None:
    bad = ACL_FILE.replace("    secretKey: pubsecret1\n", "    secretKey: short\n")
    log = start_failure(tmp_path / "bad", bad, module_namesrv[1])
    n = bad.splitlines().index("    secretKey: short") + 1
    assert f"plain_acl.yml:{n}: key accounts[1].secretKey" in log, log
    assert "Traceback" not in log, log
    log = start_failure(tmp_path / "yaml", "accounts:\n  - accessKey: [x\n", module_namesrv[1])
    assert "bad ACL file" in log and "plain_acl.yml:" in log, log
    log = start_failure(tmp_path / "missing", None, module_namesrv[1])
    assert "does not exist" in log and "aclFilePath" in log, log
    assert "Traceback" not in log, log


def test_a_refused_oneway_gets_no_answer_and_changes_nothing(
    broker: tuple[str, Path, BrokerProcess], client: RemotingClient
) -> None:
    addr = broker[0]
    before = committed_offset(client, addr)
    header = update_offset_header(ACL_GROUP, ACL_TOPIC, 0, before + 5)
    client.invoke_oneway(addr, RequestCode.UPDATE_CONSUMER_OFFSET, header)
    wrong = sign(header, None, (PUBLISHER[0], "wrong-secret"))
    client.invoke_oneway(addr, RequestCode.UPDATE_CONSUMER_OFFSET, wrong)
    # The same connection answers the next request, and the offset did not move.
    assert committed_offset(client, addr) == before
    signed = sign(header, None, PUBLISHER)
    client.invoke_oneway(addr, RequestCode.UPDATE_CONSUMER_OFFSET, signed)
    deadline = time.monotonic() + 20
    while committed_offset(client, addr) != before + 5:
        assert time.monotonic() < deadline, "the signed oneway was not applied"
        time.sleep(0.05)


def test_the_example_acl_file_does_what_its_comments_say(
    tmp_path: Path, module_namesrv: tuple[object, str], client: RemotingClient
) -> None:
    """examples/plain_acl.yml (SECURITY.md's starting point) loads, and its three accounts get
    what their comments promise."""
    example = Path(__file__).resolve().parent.parent / "examples" / "plain_acl.yml"
    admin = ("rmq-admin", "change-me-admin-secret")
    app = ("orders-app", "change-me-app-secret")
    auditor = ("auditor", "change-me-auditor-secret")
    with acl_broker(tmp_path, module_namesrv[1], example.read_text()) as (addr, _, _):
        for topic in ("orders", "payments"):
            header = create_topic_header(topic, 1)
            r = invoke_signed(client, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header, None, app)
            assert r.code == NO_PERMISSION and "is not an admin" in (r.remark or "")
            r = invoke_signed(
                client, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header, None, admin
            )
            assert r.code == ResponseCode.SUCCESS, r.remark
        sends = {
            (app, "orders"): ResponseCode.SUCCESS,
            (app, "payments"): NO_PERMISSION,
            (auditor, "orders"): NO_PERMISSION,
        }
        for (account, topic), expected in sends.items():
            header = send_v2_header("PG_EX", topic, "t", "k")
            r = invoke_signed(client, addr, RequestCode.SEND_MESSAGE_V2, header, b"x", account)
            assert r.code == expected, (account[0], topic, r.remark)
        reads = {
            (app, "order-processor"): ResponseCode.SUCCESS,
            (app, "billing"): NO_PERMISSION,
            (auditor, "billing"): ResponseCode.SUCCESS,
        }
        for (account, group), expected in reads.items():
            header = {"consumerGroup": group, "topic": "orders", "queueId": "0"}
            code = RequestCode.QUERY_CONSUMER_OFFSET
            r = invoke_signed(client, addr, code, header, None, account)
            # an offset never committed answers QUERY_NOT_FOUND: past the ACL check all the same
            passed = r.code in (ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND)
            assert passed == (expected == ResponseCode.SUCCESS), (account[0], group, r.remark)
