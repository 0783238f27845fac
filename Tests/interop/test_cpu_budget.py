"""Event loops follow the CPUs the process may use (issue 30): a server
pinned to one CPU runs one event loop and sizes NIO's shared loops to it,
`--event-loops` / `--compute-threads` choose the numbers, and Status and the
start-up log say them. Bad values are refused before anything starts."""
from __future__ import annotations

import os
import subprocess
import tempfile

import grpc
import pytest

from conftest import herald_binary, start_herald


def loop_threads(pid: int) -> dict[str, int]:
    """Threads by name prefix: NIO-ELT (event loop groups) and NIO-SGLTN (NIO's shared group)."""
    counts: dict[str, int] = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                name = f.read().strip()
        except FileNotFoundError:
            continue  # a thread that ended meanwhile
        for prefix in ("NIO-ELT", "NIO-SGLTN", "TP-#"):
            if name.startswith(prefix):
                counts[prefix] = counts.get(prefix, 0) + 1
    return counts


def status(stubs, server):
    with grpc.insecure_channel(server.address) as channel:
        return stubs.push_pb2_grpc.PushServiceStub(channel).Status(stubs.push_pb2.StatusRequest(), timeout=10)


@pytest.mark.parametrize("value", ["-1", "abc", "1025", "1.5", ""])
def test_bad_thread_counts_are_refused_naming_the_setting(value):
    for setting in ("--event-loops", "--compute-threads"):
        result = subprocess.run([herald_binary(), "serve", "--check-config", "--data-dir", tempfile.mkdtemp(),
                                 setting, value], capture_output=True, text=True, timeout=60)
        assert result.returncode != 0, result
        assert setting.lstrip("-") in result.stderr, result.stderr


def test_a_server_pinned_to_one_cpu_runs_one_loop(stubs):
    cpu = min(os.sched_getaffinity(0))
    server = start_herald(preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    try:
        got = status(stubs, server)
        assert (got.server.event_loops, got.server.compute_threads, got.server.usable_cpus) == (1, 1, 1), got.server
        threads = loop_threads(server.proc.pid)
        # The server's group and NIO's shared one (the providers' clients), one loop each.
        assert threads.get("NIO-ELT") == 1, threads
        assert threads.get("NIO-SGLTN", 0) <= 1, threads
        assert any("1 event loops, 1 compute threads; 1 CPU usable" in line for line in server.stderr_lines), \
            server.stderr_lines
    finally:
        assert server.stop() == 0


def test_the_settings_choose_the_numbers(stubs):
    server = start_herald("--event-loops", "3", "--compute-threads", "2")
    try:
        got = status(stubs, server)
        usable = len(os.sched_getaffinity(0))
        assert (got.server.event_loops, got.server.compute_threads) == (3, 2), got.server
        # No quota is assumed here: at most the affinity, at least one.
        assert 1 <= got.server.usable_cpus <= usable, got.server
        assert loop_threads(server.proc.pid).get("NIO-ELT") == 3
        assert any("3 event loops, 2 compute threads;" in line for line in server.stderr_lines), server.stderr_lines
    finally:
        assert server.stop() == 0


def test_by_default_one_loop_per_usable_cpu(stubs):
    server = start_herald()
    try:
        got = status(stubs, server)
        assert got.server.event_loops == got.server.usable_cpus
        assert got.server.compute_threads == max(1, got.server.usable_cpus - 1)
        assert 1 <= got.server.usable_cpus <= len(os.sched_getaffinity(0))
    finally:
        assert server.stop() == 0
