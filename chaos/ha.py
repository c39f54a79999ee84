"""Replication under crashes: kill -9 of a SYNC_MASTER whose slave must hold everything acked.

One phase: a nameserver, a master (``SYNC_MASTER``, ``ASYNC_FLUSH``: RocketMQ's recommended
pair, where the slave's copy is what makes an ack durable), its slave (``SLAVE``, brokerId 1,
the same brokerName), the topic, producer threads of the Python SDK (:class:`chaos.load.Load`)
and of the official Java client (:class:`chaos.load.JavaLoad`), and one push
consumer of the whole topic that runs from start to end. Then N times: let the load run a
random 1.5 to 5 s, kill -9 the master, and time how long the consumer takes to receive, from
the slave, every message acked before the kill (it must within ``CARRY_ON_S``); restart the
master on its own store and let it catch the slave up.

At the end the load stops, the slave's max offset must reach the master's, the whole topic is
read back through a pull consumer (every acked key must be there), both brokers stop cleanly,
and the two CommitLogs must hold the same bytes (SHA-256 of ``[0, max offset)``).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaos.cluster import STORE_CONF, TOPIC, Broker, CampaignError, Namesrv, free_port
from chaos.load import JavaLoad, Load, drain, tally
from chaos.walk import commit_log_digest
from rmq import PushConsumer
from rmq._rmq import RemotingClient, StoredMessage
from rmq.codes import RequestCode
from rmq.errors import RmqError

LOAD_SECONDS = (1.5, 5.0)
CARRY_ON_S = 30.0
CATCH_UP_S = 120.0
GROUP_NAME = "broker-chaos-ha"


class Seen:
    """The keys the push consumer received (any number of times)."""

    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.deliveries = 0
        self._lock = threading.Lock()

    def __call__(self, msgs: list[StoredMessage]) -> None:
        with self._lock:
            for m in msgs:
                self.keys.add(m.body.split(b"|", 1)[0].decode(errors="replace"))
                self.deliveries += 1

    def missing(self, keys: set[str]) -> set[str]:
        with self._lock:
            return keys - self.keys


def examples(keys: set[str], n: int = 5) -> str:
    return f", e.g. {sorted(keys)[:n]}" if keys else ""


def max_offset(client: RemotingClient, addr: str) -> int | None:
    try:
        resp = client.invoke(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    except RmqError:
        return None
    if resp.code != 0:
        return None
    return int(json.loads(resp.body or b"{}")["table"]["commitLogMaxOffset"])


def wait_caught_up(client: RemotingClient, master: Broker, slave: Broker) -> float:
    """Seconds until the slave's max offset equals the master's (which must not move)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < CATCH_UP_S:
        m, s = max_offset(client, master.addr), max_offset(client, slave.addr)
        if m is not None and m == s:
            return time.monotonic() - t0
        time.sleep(0.1)
    raise CampaignError(
        f"the slave did not catch up within {CATCH_UP_S:.0f} s (master "
        f"{max_offset(client, master.addr)}, slave {max_offset(client, slave.addr)})"
    )


def run(
    name: str,
    work: Path,
    cycles: int,
    threads: int,
    seed: int,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """Run the phase; returns its figures (``error`` set when a step could not be done)."""
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "phase": name,
        "flush": "ASYNC_FLUSH",
        "crash": "kill9-master",
        "role": "SYNC_MASTER",
        "cycles_planned": cycles,
        "seed": seed,
        "threads": threads,
    }
    ns = Namesrv(work)
    group = {"brokerName": GROUP_NAME}
    master = Broker(
        work,
        work / "master-store",
        ns.addr,
        "ASYNC_FLUSH",
        {**group, "brokerRole": "SYNC_MASTER", "haListenPort": str(free_port())},
        name="master",
    )
    slave = Broker(
        work,
        work / "slave-store",
        ns.addr,
        "ASYNC_FLUSH",
        {**group, "brokerRole": "SLAVE", "brokerId": "1"},
        name="slave",
    )
    load = Load(ns.addr, run=name, threads=threads)
    java = JavaLoad(ns.addr, run=name, threads=max(1, threads // 2))
    seen = Seen()
    consumer: PushConsumer | None = None
    client = RemotingClient()
    carry_on: list[float] = []
    late: list[int] = []
    restarts: list[float] = []
    started = time.monotonic()
    try:
        master.start()
        slave.start()
        master.create_topic()
        consumer = PushConsumer(
            f"chaos_ha_{name}",
            ns.addr,
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            rebalance_interval_ms=1000,
            poll_name_server_interval=1000,
            persist_consumer_offset_interval=1000,
        )
        consumer.subscribe(TOPIC, "*")
        consumer.register_message_listener_concurrently(seen)
        consumer.start()
        load.start()
        java.start()
        for c in range(cycles):
            up = rng.uniform(*LOAD_SECONDS)
            time.sleep(up)
            master.kill9()
            load.epoch = java.epoch = c + 1
            acked_now = load.acked_keys() | java.acked_keys()
            t0 = time.monotonic()
            while seen.missing(acked_now) and time.monotonic() - t0 < CARRY_ON_S:
                time.sleep(0.05)
            carry_on.append(time.monotonic() - t0)
            missing = seen.missing(acked_now)
            late.append(len(missing))
            restarts.append(master.start())
            progress(
                f"{name}: cycle {c + 1}/{cycles}: kill -9 of the master after {up:.1f} s, "
                f"{len(acked_now)} acked so far, consumer had all of them from the slave after "
                f"{carry_on[-1]:.1f} s ({late[-1]} still missing{examples(missing)}), master "
                f"back in {restarts[-1]:.1f} s"
            )
        load.stop()
        java.stop()
        catch_up = wait_caught_up(client, master, slave)
        progress(f"{name}: load stopped; slave caught up in {catch_up:.1f} s; reading back")
        got = drain(ns.addr, f"chaos_check_{name}")
        t = tally({**load.acked, **java.acked}, load.unacked | java.unacked, got)
        end = max_offset(client, master.addr)
        if end is None:
            raise CampaignError("the master did not answer GET_BROKER_RUNTIME_INFO at the end")
        consumer.shutdown()
        consumer = None
        for b in (master, slave):
            if b.stop() != 0:
                raise CampaignError(f"{b.log} : the broker did not stop cleanly")
        size = int(STORE_CONF["mappedFileSizeCommitLog"])
        digests = [commit_log_digest(b.store / "commitlog", end, size) for b in (master, slave)]
        result.update(t.as_dict())
        result.update(
            cycles=len(restarts),
            carry_on_seconds_max=round(max(carry_on, default=0.0), 2),
            carry_on_seconds_median=round(sorted(carry_on)[len(carry_on) // 2], 2)
            if carry_on
            else 0.0,
            acked_missing_after_carry_on=sum(late),
            restart_seconds_max=round(max(restarts, default=0.0), 2),
            final_catch_up_seconds=round(catch_up, 2),
            commit_log_bytes=end,
            commit_logs_identical=digests[0] == digests[1],
            consumer_deliveries=seen.deliveries,
            acked_by_java=len(java.acked),
            send_errors=dict((load.errors + java.errors).most_common()),
        )
        progress(
            f"{name}: {t.acked} acked, {t.lost} lost, {t.duplicated} duplicated; consumer "
            f"carried on from the slave in at most {result['carry_on_seconds_max']} s; "
            f"CommitLogs identical: {result['commit_logs_identical']}"
        )
    except (CampaignError, RmqError) as exc:
        result["error"] = str(exc)
        result["cycles"] = len(restarts)
        progress(f"{name}: FAILED after {len(restarts)} cycles: {str(exc)[:2000]}")
    finally:
        load.stop()
        java.stop()
        if consumer is not None:
            consumer.shutdown()
        master.kill9()
        slave.kill9()
        ns.stop()
        client.close()
        result["seconds"] = round(time.monotonic() - started, 1)
        result["broker_log"] = f"{master.log} {slave.log}"
    return result
