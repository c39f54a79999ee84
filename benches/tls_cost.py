"""The cost of TLS to a client of ``python -m rmq.bench``: one nameserver and one broker with
``tls.server.mode = permissive`` (certificates made by ``tests/tls_helpers.py``), so that plain
and TLS runs meet the same processes; each round runs the producer (``-w 64``, 128-byte bodies,
``--count`` messages to a fresh topic) then the consumer of that topic, plain then TLS, and
prints the median ratios TLS / plain over ``--rounds``. The broker-side cost without the Python
client in the way is the criterion group ``broker_tls_1KiB``
(``cargo bench -p rmq-benches --bench broker -- _tls``).

    .venv/bin/python benches/tls_cost.py [--rounds 3] [--count 200000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the certificates and TLS processes of the tests
from tls_helpers import TlsCluster, make_pki, server_keys  # noqa: E402


def bench(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "rmq.bench", *args, "--json", "-q"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        raise SystemExit(f"rmq.bench {args[0]} failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--count", type=int, default=200_000)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rmq-tls-bench-"))
    pki = make_pki(work / "pki")
    tps: dict[tuple[str, str], list[float]] = {}
    with TlsCluster(work) as cluster:
        ns, _, _ = cluster.start(server_keys(pki, "permissive"), server_keys(pki, "permissive"))
        for rnd in range(args.rounds):
            for name, extra in (("plain", []), ("tls", ["--tls", "--tls-ca", str(pki.ca)])):
                topic = f"BenchTls{rnd}{name}"
                common = ["-n", ns.addr, "-t", topic, "-c", str(args.count), *extra]
                sent = bench("producer", *common, "-s", "128", "-w", "64")
                read = bench("consumer", *common)
                for side, result in (("send", sent), ("consume", read)):
                    tps.setdefault((side, name), []).append(float(result["tps"]))
                print(
                    f"round {rnd} {name}: send {sent['tps']:.0f}/s, consume {read['tps']:.0f}/s",
                    file=sys.stderr,
                    flush=True,
                )
    summary = {
        f"{side}_{name}_tps_median": statistics.median(tps[(side, name)])
        for side in ("send", "consume")
        for name in ("plain", "tls")
    }
    for side in ("send", "consume"):
        ratios = [t / p for t, p in zip(tps[(side, "tls")], tps[(side, "plain")], strict=True)]
        summary[f"{side}_tls_over_plain_median"] = round(statistics.median(ratios), 3)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
