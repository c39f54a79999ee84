"""Kill -9 of a SYNC_MASTER under load, three times (``make chaos`` runs the same phase for 20
cycles): every acked message reaches a running push consumer through the slave while the master
is down, nothing acked is lost, and after the master's returns the two CommitLogs are the same
bytes. The phase is :mod:`chaos.ha`; its docstring says what each cycle does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent))  # the repository: the chaos package
from chaos import ha


@pytest.mark.timeout(600)
def test_sync_master_killed_three_times_loses_nothing(tmp_path: Path) -> None:
    lines: list[str] = []
    result = ha.run("ha-test", tmp_path, cycles=3, threads=4, seed=14, progress=lines.append)
    explain = "\n".join(lines) + f"\nlogs: {result['broker_log']}"
    assert "error" not in result, explain
    assert result["acked"] > 0, explain
    assert result["lost"] == 0, explain
    assert result["acked_missing_after_carry_on"] == 0, explain
    assert result["commit_logs_identical"], explain
