"""Sub-commands that measure sends, through the client SDK's producer: ``clusterRT`` (each
broker's own broker-name topic, a row per broker per round), ``checkMsgSendRT`` (a topic's
queues in turn, a row per send) and ``sendMsgStatus`` (one broker, each SendResult)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rmq.admin.client import Admin, AdminError
from rmq.admin.command import arg, subcommand
from rmq.admin.output import Result, parse_bool
from rmq.errors import RmqError, TopicNotExistError

if TYPE_CHECKING:
    import rmq

__all__: list[str] = []

GMT8 = dt.timezone(dt.timedelta(hours=8))
"""mqadmin's clusterRT prints its log lines' times in GMT+8 whatever the local zone."""


def _producer(admin: Admin, group: str) -> rmq.Producer:
    import rmq

    return rmq.Producer(
        group,
        ";".join(admin.namesrv_addrs),
        access_key=admin.access_key,
        secret_key=admin.secret_key,
        **admin.tls.as_kwargs(),
    ).start()


def _positive(name: str, value: int) -> int:
    if value <= 0:
        raise AdminError(f"{name} takes a positive number, not {value}")
    return value


def _timed_send(
    producer: rmq.Producer, msg: rmq.Message, **kw: Any
) -> tuple[float, rmq.SendResult | None, RmqError | None]:
    """(milliseconds, the result or None, the error or None) of one send."""
    start = time.perf_counter()
    try:
        result = producer.send(msg, **kw)
    except RmqError as exc:
        return (time.perf_counter() - start) * 1000, None, exc
    return (time.perf_counter() - start) * 1000, result, None


def _average(times: list[float]) -> float:
    """mqadmin leaves the first send (connection set-up) out of the average."""
    rest = times[1:] or times
    return sum(rest) / len(rest) if rest else 0.0


@subcommand(
    "clusterRT",
    "List All clusters Message Send RT",
    arg("-a", "--amount", type=int, default=100, help="messages per broker (default: 100)"),
    arg("-s", "--size", type=int, default=128, help="message size in bytes (default: 128)"),
    arg("-c", "--cluster", help="only this cluster (default: every cluster)"),
    arg(
        "-p",
        "--printLog",
        type=parse_bool,
        default=False,
        metavar="{true,false}",
        help="print as log lines time|room|cluster|broker|rt (default: false)",
    ),
    arg("-m", "--machineRoom", default="noname", help="machine room name for -p (noname)"),
    arg("-i", "--interval", type=int, default=10, help="seconds between rounds (default: 10)"),
    arg(
        "--rounds",
        type=int,
        default=0,
        help="stop after this many rounds (rmq's; default: run until interrupted, as mqadmin; "
        "--json does one round)",
    ),
)
def cluster_rt(admin: Admin, args: argparse.Namespace) -> Result:
    import rmq

    amount = _positive("-a", args.amount)
    size = _positive("-s", args.size)
    interval = _positive("-i", args.interval)
    rounds = args.rounds or (1 if args.json else 0)
    info = admin.cluster_info()
    clusters = [args.cluster.strip()] if args.cluster else sorted(info.clusters)
    targets = [(c, b.broker_name) for c in clusters for b in info.brokers_of(c)]
    producer = _producer(admin, str(int(time.time() * 1000)))
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []

    def measure() -> Iterator[dict[str, Any]]:
        for cluster, broker in targets:
            msg = rmq.Message(broker, b"a" * size)
            times, failed = [], 0
            error: RmqError | None = None
            for _ in range(amount):
                ms, result, why = _timed_send(producer, msg)
                times.append(ms)
                if result is None:
                    failed, error = failed + 1, why
            if failed == amount:
                warning = f"every send to {broker}'s own topic {broker!r} failed: {error}"
                if isinstance(error, TopicNotExistError):
                    warning += " — the broker-name topic exists only with brokerTopicEnable=true"
                if args.json:
                    warnings.append(warning)
                else:  # now: a run until interrupted never gets to the warnings at the end
                    print(f"rmq clusterRT: warning: {warning}", file=sys.stderr, flush=True)
            yield {
                "cluster": cluster,
                "brokerName": broker,
                "rt": round(_average(times), 2),
                "successCount": amount - failed,
                "failCount": failed,
            }

    def line(r: dict[str, Any]) -> str:
        if args.printLog:
            now = dt.datetime.now(GMT8).strftime("%Y-%m-%d %H:%M:%S")
            rt = int(r["rt"] + 0.5)
            return f"{now}|{args.machineRoom}|{r['cluster']}|{r['brokerName']}|{rt}"
        return (
            f"{r['cluster']:<24}  {r['brokerName']:<24}  {r['rt']:<8.2f}  "
            f"{r['successCount']:<16}  {r['failCount']:<16}"
        ).rstrip()

    def run() -> Iterator[str]:
        try:
            if not args.printLog:
                yield (
                    f"{'#Cluster Name':<24}  {'#Broker Name':<24}  {'#RT':<8}  "
                    f"{'#successCount':<16}  #failCount"
                )
            n = 0
            while True:
                for r in measure():
                    rows.append(r)
                    yield line(r)
                n += 1
                if rounds and n >= rounds:
                    return
                time.sleep(interval)
        finally:
            producer.shutdown()

    if args.json:
        for _ in run():
            pass
        return Result({"brokers": rows}, [], warnings)
    return Result(None, run(), warnings)


@subcommand(
    "checkMsgSendRT",
    "check message send response time",
    arg("-t", "--topic", required=True, help="topic name"),
    arg("-a", "--amount", type=int, default=100, help="message amount (default: 100)"),
    arg("-s", "--size", type=int, default=128, help="message size in bytes (default: 128)"),
)
def check_msg_send_rt(admin: Admin, args: argparse.Namespace) -> Result:
    import rmq

    topic = args.topic.strip()
    amount = _positive("-a", args.amount)
    size = _positive("-s", args.size)
    producer = _producer(admin, str(int(time.time() * 1000)))
    try:
        try:
            queues = producer.fetch_publish_message_queues(topic)
        except RmqError as exc:
            raise AdminError(f"cannot send to topic {topic!r}: {exc}") from None
        if not queues:
            raise AdminError(f"topic {topic!r} has no writable queue (rmq topicRoute -t {topic})")
        msg = rmq.Message(topic, b"a" * size)
        sends: list[dict[str, Any]] = []
        for i in range(amount):
            queue = queues[i % len(queues)]
            ms, result, error = _timed_send(producer, msg, queue=queue)
            sends.append(
                {
                    "brokerName": queue.broker_name,
                    "queueId": queue.queue_id,
                    "success": result is not None,
                    "rt": round(ms, 3),
                    "error": str(error) if error else "",
                }
            )
    finally:
        producer.shutdown()
    avg = _average([s["rt"] for s in sends])
    lines = [f"{'#Broker Name':<32}  {'#QID':<4}  {'#Send Result':<20}    #RT"]
    lines += [
        f"{s['brokerName']:<32}  {s['queueId']:<4}  {str(s['success']).lower():<20}    "
        f"{int(s['rt'] + 0.5)}"
        for s in sends
    ]
    lines.append(f"Avg RT: {avg:.2f}")
    failed = [s["error"] for s in sends if not s["success"]]
    warnings = [f"{len(failed)} of {amount} sends failed; the last: {failed[-1]}"] if failed else []
    return Result({"topic": topic, "avgRt": round(avg, 2), "sends": sends}, lines, warnings)


def _jodie(size: int) -> bytes:
    """mqadmin's sendMsgStatus body: "hello jodie" repeated up to ``size`` bytes and past."""
    return b"hello jodie" * max(1, -(-size // 11))


def send_result_text(r: rmq.SendResult) -> str:
    """RocketMQ's ``SendResult.toString``."""
    return (
        f"SendResult [sendStatus={r.status}, msgId={r.msg_id}, offsetMsgId={r.offset_msg_id}, "
        f"messageQueue={r.queue}, queueOffset={r.queue_offset}]"
    )


@subcommand(
    "sendMsgStatus",
    "send msg to broker.",
    arg("-b", "--brokerName", required=True, help="broker name (sends to its own topic)"),
    arg("-s", "--messageSize", type=int, default=128, help="message size (default: 128)"),
    arg("-c", "--count", type=int, default=50, help="messages to send (default: 50)"),
)
def send_msg_status(admin: Admin, args: argparse.Namespace) -> Result:
    import rmq

    broker = args.brokerName.strip()
    size = _positive("-s", args.messageSize)
    count = _positive("-c", args.count)
    known = admin.cluster_info().brokers
    if broker not in known:
        names = ", ".join(sorted(known)) or "none"
        raise AdminError(
            f"broker {broker!r} is not known to the nameserver (brokers: {names}) — -b takes "
            "a broker name, as rmq clusterList shows it"
        )
    producer = _producer(admin, "PID_SMSC")
    sends: list[dict[str, Any]] = []
    lines: list[str] = []
    try:
        try:
            producer.send(rmq.Message(broker, _jodie(16)))
        except RmqError as exc:
            raise AdminError(
                f"cannot send to broker {broker!r}'s own topic: {exc} — -b takes a broker name "
                "(rmq clusterList), and the broker needs brokerTopicEnable=true"
            ) from None
        for _ in range(count):
            ms, result, error = _timed_send(producer, rmq.Message(broker, _jodie(size)))
            if result is None:
                raise AdminError(f"a send to broker {broker!r} failed: {error}")
            sends.append(
                {
                    "rt": round(ms, 3),
                    "sendStatus": result.status,
                    "msgId": result.msg_id,
                    "offsetMsgId": result.offset_msg_id,
                    "queueId": result.queue.queue_id,
                    "queueOffset": result.queue_offset,
                }
            )
            lines.append(f"rt={int(ms + 0.5)}ms, SendResult={send_result_text(result)}")
    finally:
        producer.shutdown()
    return Result({"brokerName": broker, "sends": sends}, lines)
