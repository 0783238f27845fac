"""Delivery-policy configuration (issue 26, SPEC §4b) through the real
binary: `--delivery-policy` (repeatable, config-file lines too) and
`--delivery-policies-file` (HERALD_DELIVERY_POLICIES_FILE, re-read on
SIGHUP). A bad spec stops start-up with one line naming its source and key;
good ones start; a reload swaps the set whole or keeps the one in force."""
from __future__ import annotations

import signal
import time

import pytest

from conftest import start_herald
from test_config_strict import one_error_line, run_serve

GOOD = "bundles=com.example.a,com.example.b timezone=Europe/Berlin quiet-hours=22:00-08:00 cap=3/24h cap=10/7d campaign-cap=1/7d max-per-second=500"


# Hostile first: each refusal names the flag and the key, quotes the value.

@pytest.mark.parametrize("spec,key,needle", [
    ("bundles=com.example.a colour=red", "colour", "unknown key"),
    ("bundles=com.example.a cap=0/1h", "cap", "count must be 1...1000000"),
    ("bundles=com.example.a cap=3/0h", "cap", "period must be 1s...366d"),
    ("bundles=com.example.a cap=99999999999999999999999/1h", "cap", "count must be"),
    ("bundles=com.example.a quiet-hours=24:00-08:00", "quiet-hours", "HH:MM-HH:MM"),
    ("bundles=com.example.a quiet-hours=22:00-22:00", "quiet-hours", "ambiguous"),
    ("bundles=com.example.a timezone=Mars/Olympus_Mons", "timezone", "unknown time zone"),
    ("bundles=com.example.a timezone=../../etc/passwd", "timezone", "not a time zone name"),
    ("bundles=com.example.a max-per-second=0", "max-per-second", "1...1000000"),
    ("bundles=com.example.a timezone=UTC timezone=UTC", "timezone", "given twice"),
    ("timezone=UTC", "bundles", "required"),
    ("bundles=com.example.a,", "bundles", "empty bundle"),
])
def test_a_bad_delivery_policy_flag_stops_start_up_naming_the_key(tmp_path, spec, key, needle):
    error = one_error_line(run_serve(["--delivery-policy", spec, "--port", "0", "--data-dir", str(tmp_path / "data")]))
    assert f"--delivery-policy #1: {key}" in error and needle in error, error
    assert not (tmp_path / "data").exists()


def test_an_over_long_spec_is_refused_in_one_short_line(tmp_path):
    error = one_error_line(run_serve(["--delivery-policy", "bundles=com.example.a " + "x" * 10_000,
                                      "--data-dir", str(tmp_path / "data")]))
    assert "4096" in error and len(error) < 300, error


def test_a_bad_config_file_line_names_file_line_and_key(tmp_path):
    config = tmp_path / "herald.conf"
    config.write_text(f"# policies\ndelivery-policy = {GOOD}\ndelivery-policy = bundles=com.example.c cap=1/1w\n")
    error = one_error_line(run_serve(["--config", str(config), "--data-dir", str(tmp_path / "data")]))
    assert f"{config}:3: delivery-policy" in error and "cap " in error and "1/1w" in error, error


def test_a_bad_policies_file_from_the_environment_names_its_line_and_key(tmp_path):
    policies = tmp_path / "policies"
    policies.write_text(f"# ops\n{GOOD}\n\nbundles=com.example.c quiet-hours=7:5-08:00\n")
    error = one_error_line(run_serve(["--data-dir", str(tmp_path / "data")],
                                     env={"HERALD_DELIVERY_POLICIES_FILE": str(policies)}))
    assert str(policies) in error and "line 4: quiet-hours" in error and "7:5-08:00" in error, error


def test_a_bundle_with_two_policies_is_refused_naming_both(tmp_path):
    policies = tmp_path / "policies"
    policies.write_text("bundles=com.example.b cap=1/1h\n")
    error = one_error_line(run_serve(["--delivery-policy", GOOD, "--delivery-policies-file", str(policies),
                                      "--data-dir", str(tmp_path / "data")]))
    assert "com.example.b" in error and f"{policies} line 1" in error, error


def test_a_missing_policies_file_is_one_line(tmp_path):
    error = one_error_line(run_serve(["--delivery-policies-file", str(tmp_path / "nope"), "--data-dir", str(tmp_path)]))
    assert "nope" in error


def test_check_config_accepts_good_policies(tmp_path):
    result = run_serve(["--check-config", "--delivery-policy", GOOD, "--data-dir", str(tmp_path / "data")])
    assert result.returncode == 0, result.stderr
    assert "configuration OK" in result.stdout


# Good ones start, and SIGHUP swaps the file's set whole.

def _wait_for_log(server, needle, before, timeout=30.0):
    deadline = time.monotonic() + timeout
    while sum(needle in line for line in list(server.stderr_lines)) <= before:
        assert server.proc.poll() is None, "SIGHUP ended the process"
        assert time.monotonic() < deadline, f"timed out waiting for {needle!r}"
        time.sleep(0.02)
    return [line for line in server.stderr_lines if needle in line][-1]


def _reload(server, needle):
    before = sum(needle in line for line in list(server.stderr_lines))
    server.proc.send_signal(signal.SIGHUP)
    return _wait_for_log(server, needle, before)


def test_good_policies_start_and_a_reload_swaps_the_file_or_keeps_the_set_in_force(tmp_path):
    policies = tmp_path / "policies"
    policies.write_text("bundles=com.example.c cap=1/1h\nbundles=com.example.d quiet-hours=23:00-07:00\n")
    config = tmp_path / "herald.conf"
    config.write_text(f"delivery-policy = {GOOD}\n")
    server = start_herald("--config", str(config), "--delivery-policies-file", str(policies),
                          "--log-level", "info", data_dir=str(tmp_path / "data"))
    try:
        assert any("delivery policies configured" in line and "bundles=4" in line for line in server.stderr_lines) \
            or _wait_for_log(server, "delivery policies configured", 0)
        # A bad file: logged with its line and key, the set in force stays.
        policies.write_text("bundles=com.example.c cap=0/1h\n")
        line = _reload(server, "reload failed")
        assert "line 1: cap" in line, line
        # A good one: swapped whole, changes named by bundle.
        policies.write_text("bundles=com.example.c cap=2/1h\nbundles=com.example.e max-per-second=5\n")
        line = _reload(server, "configuration reloaded")
        assert "policies_added=com.example.e" in line and "policies_removed=com.example.d" in line, line
        assert "policies_changed=com.example.c" in line, line
    finally:
        assert server.stop() == 0
