"""Configuration layers of `herald serve`: flag > environment > config file > default."""
from __future__ import annotations

import datetime as dt
import os
import subprocess

import grpc

from conftest import herald_binary, start_herald


def run_serve(args, env=None, timeout=60):
    return subprocess.run([herald_binary(), "serve", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def test_config_file_values_apply(tmp_path, stubs):
    config = tmp_path / "herald.conf"
    config.write_text("# Herald\ngrace-seconds = 600   # ten minutes to cancel\nmax-concurrent-streams = 7\n")
    server = start_herald("--config", str(config), data_dir=str(tmp_path / "data"))
    try:
        t, p = stubs.types_pb2, stubs.push_pb2
        with grpc.insecure_channel(server.address) as channel:
            reply = stubs.push_pb2_grpc.PushServiceStub(channel).Schedule(p.ScheduleRequest(
                bundle_id="com.example.app", platform=t.PLATFORM_IOS, user_id="u", campaign_id="c",
                deliver_within_hours=1, content=t.Content(title=t.LocalizedText(text="a"), body=t.LocalizedText(text="b"))),
                timeout=10)
        start = dt.datetime.fromisoformat(reply.window_start.replace("Z", "+00:00"))
        send_at = dt.datetime.fromisoformat(reply.send_at.replace("Z", "+00:00"))
        assert 599 <= (send_at - start).total_seconds() <= 601
    finally:
        assert server.stop() == 0


def test_unknown_config_key_is_refused_with_its_line(tmp_path):
    config = tmp_path / "herald.conf"
    config.write_text("port = 0\ncolour = blue\n")
    result = run_serve(["--config", str(config), "--data-dir", str(tmp_path)])
    assert result.returncode != 0
    assert f"{config}:2" in result.stderr and "colour" in result.stderr


def test_precedence_flag_over_environment_over_file(tmp_path):
    # A non-loopback host without tokens is refused before binding: the error
    # names the host each layer chose.
    config = tmp_path / "herald.conf"
    config.write_text("host = 10.9.9.7\n")
    base = ["--config", str(config), "--port", "0", "--data-dir", str(tmp_path)]
    from_file = run_serve(base)
    assert from_file.returncode != 0 and "10.9.9.7" in from_file.stderr
    from_env = run_serve(base, env={"HERALD_HOST": "10.9.9.8"})
    assert from_env.returncode != 0 and "10.9.9.8" in from_env.stderr
    from_flag = run_serve([*base, "--host", "10.9.9.9"], env={"HERALD_HOST": "10.9.9.8"})
    assert from_flag.returncode != 0 and "10.9.9.9" in from_flag.stderr
