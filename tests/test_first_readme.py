"""Every ```python block of README.md runs, as a user would paste it, against a real broker.

The blocks are complete programs: each reads the nameserver address from ``NAMESRV_ADDR``
(RocketMQ's own variable, default ``127.0.0.1:9876``), so this test starts one nameserver and
one broker on ephemeral ports and runs each block in a process of its own, from an empty
directory, with a timeout. A block that fails (exit status, exception, timeout) fails the test
with the README line it starts on. A block that exits 0 did what it claims: the examples check
their own results (a consumer that does not get its messages exits with an error).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import BrokerProcess, free_port, write_broker_conf

README = Path(__file__).resolve().parent.parent / "README.md"
# Client blocks take a few seconds (a consumer's first rebalance); a Spark block starts a JVM.
BLOCK_TIMEOUT_S = 120
SPARK_BLOCK_TIMEOUT_S = 300


@dataclass(frozen=True)
class Block:
    """One ```python block: the README line of its first code line, and its code."""

    line: int
    code: str

    @property
    def uses_spark(self) -> bool:
        return "pyspark" in self.code


def python_blocks(text: str) -> list[Block]:
    """The ```python blocks of a Markdown text, in order (other fences are skipped)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)(`{3,})\s*(\S*)", lines[i])
        if not fence:
            i += 1
            continue
        ticks, lang = fence.group(2), fence.group(3).lower()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(ticks):
            end += 1
        if lang in ("python", "py"):
            blocks.append(Block(line=i + 2, code="\n".join(lines[i + 1 : end]) + "\n"))
        i = end + 1
    return blocks


@dataclass(frozen=True)
class Outcome:
    """How a block ran: ``failure`` is None when it exited 0, else why it failed."""

    failure: str | None
    stderr: str


def run_block(block: Block, namesrv: str, workdir: Path, timeout: float) -> Outcome:
    """Run ``block`` as a program in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    script = workdir / f"readme_line_{block.line}.py"
    script.write_text(block.code)
    env = {
        **os.environ,
        "NAMESRV_ADDR": namesrv,
        # As a user who runs `.venv/bin/python example.py` without activating the venv: the
        # PATH's python3 has no rmq (the Spark example must still find it); temporary files
        # under the block's directory.
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "TMPDIR": str(workdir),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    where = f"README.md block at line {block.line}"
    try:
        done = subprocess.run(
            [sys.executable, script.name],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, str) else (exc.stdout or b"").decode()
        err = exc.stderr if isinstance(exc.stderr, str) else (exc.stderr or b"").decode()
        return Outcome(
            f"{where} did not finish within {timeout} s\nstdout:\n{out}\nstderr:\n{err[-4000:]}",
            err,
        )
    if done.returncode != 0:
        return Outcome(
            f"{where} failed with exit status {done.returncode}\n"
            f"stdout:\n{done.stdout}\nstderr:\n{done.stderr[-4000:]}",
            done.stderr,
        )
    return Outcome(None, done.stderr)


BLOCKS = python_blocks(README.read_text())


@pytest.fixture(scope="module")
def readme_broker(
    tmp_path_factory: pytest.TempPathFactory, module_namesrv: tuple[subprocess.Popen[str], str]
) -> Iterator[str]:
    """One nameserver and broker for every block (topics auto-created); yields the nameserver
    address."""
    work = tmp_path_factory.mktemp("readme-broker")
    _, ns_addr = module_namesrv
    conf = write_broker_conf(work, free_port())
    broker = BrokerProcess("-c", str(conf), "-n", ns_addr, cwd=work)
    try:
        broker.wait_for("listening on")
        yield ns_addr
    finally:
        broker.kill()


def test_readme_has_python_blocks_that_read_namesrv_addr() -> None:
    assert len(BLOCKS) >= 4, f"expected the README's Python examples, found {len(BLOCKS)}"
    for block in BLOCKS:
        # A block that names the default address without reading NAMESRV_ADDR would talk to
        # whatever broker runs on this machine instead of the test's.
        if "9876" in block.code or "namesrv" in block.code.lower():
            assert 'os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876")' in block.code, (
                f"README.md block at line {block.line} must read its nameserver address with "
                'os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876")'
            )


@pytest.mark.parametrize("block", BLOCKS, ids=[f"README.md:{b.line}" for b in BLOCKS])
def test_readme_block_runs(block: Block, readme_broker: str, tmp_path: Path) -> None:
    timeout = SPARK_BLOCK_TIMEOUT_S if block.uses_spark else BLOCK_TIMEOUT_S
    outcome = run_block(block, readme_broker, tmp_path / "block", timeout)
    assert outcome.failure is None, outcome.failure
    # Clients that shut down while a pull or route refresh is in flight say nothing about it.
    assert "the client was shut down" not in outcome.stderr, (
        f"README.md block at line {block.line} logged its own shutdown:\n{outcome.stderr}"
    )


def test_a_failing_block_is_named_by_its_line(tmp_path: Path) -> None:
    text = (
        "# t\n\n```sh\necho no\n```\n\nprose\n\n"
        "```python\nprint('ok')\n```\n\n"
        "```python\nimport sys\nsys.exit('boom')\n```\n"
    )
    blocks = python_blocks(text)
    assert [b.line for b in blocks] == [10, 14]
    assert run_block(blocks[0], "127.0.0.1:1", tmp_path / "a", 30).failure is None
    failure = run_block(blocks[1], "127.0.0.1:1", tmp_path / "b", 30).failure
    assert failure is not None
    assert "README.md block at line 14 failed with exit status 1" in failure
    assert "boom" in failure
