"""Broker keys the Rust server acts on reach it from broker.conf and are reported back by
GET_BROKER_CONFIG: ``autoCreateSubscriptionGroup``, ``traceOn``, ``regionId`` (they were
accepted, logged as unused and dropped), and the keys Apache mqadmin's ``exportConfigs`` reads."""

from __future__ import annotations

import re
from pathlib import Path

import rmq
from helpers import BrokerProcess, free_port, pull_header, send_v2_header
from rmq._rmq import RemotingClient
from rmq.codes import RequestCode, ResponseCode
from rmq.trace.hooks import SendTracer


def test_rust_broker_keys_take_effect_and_are_reported(tmp_path: Path) -> None:
    port = free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {tmp_path / 'store'}\n"
        "autoCreateSubscriptionGroup = false\n"
        "traceOn = false\n"
        "regionId = eu-west\n"
    )
    broker = BrokerProcess("-c", str(conf), cwd=tmp_path)
    client = RemotingClient()
    addr = f"127.0.0.1:{port}"
    try:
        broker.wait_for(f"as {addr}")
        assert "accepted but not used" not in broker.log
        got = client.invoke(addr, RequestCode.GET_BROKER_CONFIG)
        reported = dict(
            line.split("=", 1) for line in (got.body or b"").decode().splitlines() if "=" in line
        )
        assert reported["autoCreateSubscriptionGroup"] == "false"
        assert reported["traceOn"] == "false"
        assert reported["regionId"] == "eu-west"
        assert reported["useTLS"] == "false" and reported["filterServerNums"] == "0"

        # An unknown group is refused instead of created.
        header = pull_header("NoSuchGroup", "TBW102")
        pulled = client.invoke(addr, RequestCode.PULL_MESSAGE, header)
        assert pulled.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, pulled.remark
        # A send's answer carries the region and the trace switch.
        header = send_v2_header("pg", "KeysTopic", "t", "k")
        sent = client.invoke(addr, RequestCode.SEND_MESSAGE_V2, header, body=b"x")
        assert sent.code == 0, sent.remark
        assert sent.ext_fields["MSG_REGION"] == "eu-west"
        assert sent.ext_fields["TRACE_ON"] == "false"

        # The SDK sees both, and a tracing producer records no Pub for such a send.
        ns = re.search(r"embedded nameserver listening on [0-9.]+:(\d+)", broker.log)
        assert ns is not None, broker.log
        with rmq.Producer("pg-keys", f"127.0.0.1:{ns.group(1)}") as producer:
            message = rmq.Message("KeysTopic", b"y")
            result = producer.send(message)
        assert result.region_id == "eu-west" and result.trace_on is False

        class NoRecords:
            trace_topic = "RMQ_SYS_TRACE_TOPIC"

            def append(self, record: object) -> None:
                raise AssertionError(f"traced despite traceOn = false: {record}")

        SendTracer("pg-keys", NoRecords()).sent(message, result, 0)  # type: ignore[arg-type]
    finally:
        client.close()
        broker.kill()
