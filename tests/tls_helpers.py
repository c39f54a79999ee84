"""What the TLS tests share: certificates made with ``cryptography`` (one CA signing a server
certificate for 127.0.0.1 and localhost and a client certificate, and a second CA with a client
of its own, which the first CA's servers must refuse; PEM files in a dir), and a nameserver and
broker started with ``tls.*`` lines in their config files."""

from __future__ import annotations

import datetime
import ipaddress
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from helpers import TEST_STORE_CONF, BrokerProcess, free_port


@dataclass(frozen=True)
class Pki:
    """The PEM files of one test PKI."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    stranger_cert: Path
    stranger_key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[str, ec.EllipticCurvePrivateKey] | None,
    *,
    server: bool = False,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    issuer_name, issuer_key = issuer if issuer is not None else (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
    )
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
    else:
        builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        names: list[x509.GeneralName] = [x509.DNSName("localhost")]
        if server:
            names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_pki(directory: Path) -> Pki:
    """Write a CA, a server and a client certificate signed by it, and a stranger's CA and
    client certificate into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for ca_name, leaves in (("ca", ("server", "client")), ("other_ca", ("stranger",))):
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_cn = f"rmq test {ca_name}"
        out[ca_name] = directory / f"{ca_name}.pem"
        out[ca_name].write_bytes(
            _cert(ca_cn, ca_key, None).public_bytes(serialization.Encoding.PEM)
        )
        for leaf in leaves:
            key = ec.generate_private_key(ec.SECP256R1())
            cert = _cert(f"rmq test {leaf}", key, (ca_cn, ca_key), server=leaf == "server")
            out[f"{leaf}_cert"] = directory / f"{leaf}.pem"
            out[f"{leaf}_cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
            out[f"{leaf}_key"] = directory / f"{leaf}.key"
            _write_key(key, out[f"{leaf}_key"])
    return Pki(**out)


def server_keys(pki: Pki, mode: str) -> str:
    return (
        f"tls.server.mode = {mode}\n"
        f"tls.server.certPath = {pki.server_cert}\n"
        f"tls.server.keyPath = {pki.server_key}\n"
    )


class Namesrv:
    """A ``rmq.namesrv`` process with a namesrv.conf; its log goes to a file."""

    def __init__(self, work: Path, conf: str) -> None:
        path = work / "namesrv.conf"
        path.write_text(conf)
        self.log_path = work / "namesrv.log"
        args = ["--host", "127.0.0.1", "-p", "0", "-c", str(path)]
        with self.log_path.open("w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "rmq.namesrv", *args],
                stderr=log,
                text=True,
            )
        self.addr = ""
        deadline = time.monotonic() + 20
        while not self.addr and time.monotonic() < deadline and self.proc.poll() is None:
            m = re.search(r"listening on (127\.0\.0\.1:\d+)", self.log)
            self.addr = m.group(1) if m else ""
            time.sleep(0.05)
        assert self.addr, f"nameserver did not start: {self.log}"

    @property
    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


class TlsCluster:
    """Nameservers and brokers started in ``work``; all stopped on exit."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.started: list[Namesrv | BrokerProcess] = []

    def start(self, namesrv_conf: str, broker_conf: str) -> tuple[Namesrv, str, BrokerProcess]:
        """A nameserver and a broker (``broker-a``) with these extra conf lines; returns the
        nameserver, the broker's address and its process."""
        ns = Namesrv(self.work, namesrv_conf)
        self.started.append(ns)
        port = free_port()
        conf = self.work / "broker.conf"
        conf.write_text(
            "brokerName = broker-a\n"
            "brokerIP1 = 127.0.0.1\n"
            f"listenPort = {port}\n"
            f"storePathRootDir = {self.work / 'store'}\n"
            "mappedFileSizeCommitLog = 16777216\n" + TEST_STORE_CONF + broker_conf
        )
        broker = BrokerProcess("-c", str(conf), "-n", ns.addr, cwd=self.work)
        self.started.append(broker)
        broker.wait_for("listening on")  # registered by then
        return ns, f"127.0.0.1:{port}", broker

    def __enter__(self) -> TlsCluster:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for p in reversed(self.started):
            if isinstance(p, BrokerProcess):
                p.kill()
            else:
                p.stop()


def encrypt_key(key_path: Path, out: Path, password: str) -> Path:
    """``key_path``'s key written to ``out`` as an encrypted PKCS#8 PEM (``ENCRYPTED PRIVATE
    KEY``, PBES2)."""
    key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    out.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(password.encode()),
        )
    )
    return out
