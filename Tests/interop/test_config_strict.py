"""Strict configuration and start-up errors of `herald serve` (issue 11):
every layer's values are checked as flags are, errors name their source,
`--check-config` validates without binding, and every start-up failure is
one line on stderr with a non-zero exit."""
from __future__ import annotations

import os
import socket
import subprocess

import pytest

from conftest import herald_binary, start_herald

TOKENS = "ci ci-token-0123456789abcdef com.example.app\n"


def run_serve(args, env=None, timeout=60):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    return subprocess.run([herald_binary(), "serve", *args], capture_output=True, text=True, timeout=timeout,
                          env={**environment, **(env or {})})


def one_error_line(result) -> str:
    """The failure: a non-zero exit, exactly one line on stderr, nothing served."""
    assert result.returncode != 0, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "listening on" not in result.stdout
    return lines[0]


@pytest.fixture
def taken_port():
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    yield holder.getsockname()[1]
    holder.close()


# Hostile values first: each names its source and the key.

@pytest.mark.parametrize("line,needle", [
    ("grace-seconds = 5s", '5s'),
    ("port = 70000", "0...65535"),
    ("context-aware-share = lots", "lots"),
    ("durability = sometimes", "sometimes"),
    ("log-level = loud", "loud"),
    ("idle-timeout = 0", "86400"),
    ("apns-route = team=T key-id=K", "team"),
    ("sim-unregistered = abcd:yesterday", "yesterday"),
])
def test_a_bad_config_file_value_stops_start_up_naming_file_line_and_key(tmp_path, line, needle):
    config = tmp_path / "herald.conf"
    config.write_text(f"# comment\n{line}\n")
    key = line.split("=")[0].strip()
    error = one_error_line(run_serve(["--config", str(config), "--data-dir", str(tmp_path / "data")]))
    assert f"{config}:2: {key}" in error and needle in error, error
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("name,value,needle", [
    ("HERALD_PORT", "abc", "integer"),
    ("HERALD_GRACE_SECONDS", "99999", "0...3600"),
    ("HERALD_CONTEXT_AWARE_SHARE", "1.5", "between 0 and 1"),
    ("HERALD_LOG_FORMAT", "xml", "text or json"),
    ("HERALD_MAX_CONNECTIONS", "0", "at least 1"),
])
def test_a_bad_environment_value_stops_start_up_naming_the_variable(tmp_path, name, value, needle):
    error = one_error_line(run_serve(["--data-dir", str(tmp_path / "data")], env={name: value}))
    assert name in error and needle in error and value in error, error


def test_an_overridden_bad_value_is_still_refused(tmp_path):
    # The flag wins over the environment and the file, but a typo anywhere
    # is still a typo.
    config = tmp_path / "herald.conf"
    config.write_text("port = 5O051\n")
    error = one_error_line(run_serve(["--config", str(config), "--port", "0", "--data-dir", str(tmp_path)],
                                     env={"HERALD_PORT": "0"}))
    assert f"{config}:1: port" in error and "5O051" in error


def test_an_overridden_bad_list_line_is_still_refused(tmp_path):
    config = tmp_path / "herald.conf"
    config.write_text("sim-unregistered = abcd:yesterday\n")
    error = one_error_line(run_serve(["--config", str(config), "--sim-unregistered", "ef01", "--port", "0",
                                      "--data-dir", str(tmp_path)]))
    assert f"{config}:1: sim-unregistered" in error and "yesterday" in error
    error = one_error_line(run_serve(["--sim-unregistered", "ef01:soon", "--port", "0", "--data-dir", str(tmp_path)]))
    assert "--sim-unregistered #1" in error and "soon" in error


def test_a_bad_flag_names_the_flag(tmp_path):
    error = one_error_line(run_serve(["--port", "70000", "--data-dir", str(tmp_path)]))
    assert "--port" in error and "70000" in error
    error = one_error_line(run_serve(["--port", "abc", "--data-dir", str(tmp_path)]))
    assert "abc" in error


def test_an_unreadable_config_file_is_one_line(tmp_path):
    error = one_error_line(run_serve(["--config", str(tmp_path / "missing.conf"), "--data-dir", str(tmp_path)]))
    assert "missing.conf" in error


# Start-up failures: one line, before anything starts.

def test_port_in_use_names_host_and_port_before_anything_starts(tmp_path, taken_port):
    error = one_error_line(run_serve(["--port", str(taken_port), "--data-dir", str(tmp_path / "data")]))
    assert f"cannot listen on 127.0.0.1:{taken_port}" in error and "in use" in error, error
    assert "bind(" not in error and "errno" not in error
    # Nothing started: no store, no simulator.
    assert not (tmp_path / "data").exists()


def test_admin_port_in_use_names_it(tmp_path, taken_port):
    error = one_error_line(run_serve(["--port", "0", "--admin-port", str(taken_port), "--data-dir", str(tmp_path / "d")]))
    assert f"127.0.0.1:{taken_port}" in error and "in use" in error, error


def test_data_dir_that_is_a_file_says_so(tmp_path):
    path = tmp_path / "data"
    path.write_text("not a directory\n")
    error = one_error_line(run_serve(["--port", "0", "--data-dir", str(path)]))
    assert f"data directory {path} exists and is not a directory" in error, error


def test_unreadable_tokens_file_is_one_line(tmp_path):
    error = one_error_line(run_serve(["--port", "0", "--data-dir", str(tmp_path / "d"),
                                      "--tokens-file", str(tmp_path / "no-such-tokens")]))
    assert "no-such-tokens" in error and "cannot read tokens file" in error, error


def test_bad_routes_file_names_its_line(tmp_path):
    routes = tmp_path / "routes"
    routes.write_text("# routes\nteam=T key-id=K key=/x.p8 colour=blue\n")
    error = one_error_line(run_serve(["--port", "0", "--data-dir", str(tmp_path / "d"),
                                      "--apns-routes-file", str(routes)]))
    assert f"{routes}:2" in error and "colour" in error, error


# --check-config

@pytest.mark.parametrize("extra,needle", [
    (["--tokens-file", "/nonexistent/tokens"], "/nonexistent/tokens"),
    (["--apns-route", "team=T key-id=K key=/nonexistent/AuthKey.p8"], "/nonexistent/AuthKey.p8"),
    (["--host", "10.9.9.9"], "10.9.9.9"),
    (["--apns-routes-file", "/nonexistent/routes"], "/nonexistent/routes"),
    (["--config", "/nonexistent/herald.conf"], "/nonexistent/herald.conf"),
])
def test_check_config_refuses_what_serve_would(tmp_path, extra, needle):
    error = one_error_line(run_serve(["--check-config", "--data-dir", str(tmp_path / "d"), *extra]))
    assert needle in error, error


def test_check_config_refuses_a_data_dir_that_is_a_file(tmp_path):
    (tmp_path / "f").write_text("")
    error = one_error_line(run_serve(["--check-config", "--data-dir", str(tmp_path / "f")]))
    assert "not a directory" in error


def test_check_config_passes_without_binding_or_opening_the_store(tmp_path, taken_port):
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKENS)
    config = tmp_path / "herald.conf"
    config.write_text(f"port = {taken_port}\ngrace-seconds = 5\ntokens-file = {tokens}\n")
    result = run_serve(["--check-config", "--config", str(config), "--data-dir", str(tmp_path / "data")])
    assert result.returncode == 0, result.stderr
    assert "configuration OK" in result.stdout
    assert not (tmp_path / "data").exists()
    assert "ci-token" not in result.stderr + result.stdout


def test_good_values_from_every_layer_still_start(tmp_path):
    config = tmp_path / "herald.conf"
    config.write_text("grace-seconds = 5\ncontext-aware-share = 0.25\n")
    os.environ["HERALD_IDLE_TIMEOUT"] = "120"
    try:
        server = start_herald("--config", str(config), data_dir=str(tmp_path / "data"))
    finally:
        del os.environ["HERALD_IDLE_TIMEOUT"]
    assert server.stop() == 0


# The data directory never depends on where a later reader stands.

def _serve_until_listening(args, cwd, env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "STATE_DIRECTORY"))}
    process = subprocess.Popen([herald_binary(), "serve", "--port", "0", *args], cwd=cwd, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**environment, **env})
    try:
        assert "listening on" in process.stdout.readline()
    finally:
        process.terminate()
        _, err = process.communicate(timeout=60)
    return err


def test_a_relative_data_dir_is_made_absolute_at_start_and_logged(tmp_path):
    err = _serve_until_listening(["--data-dir", "rel/store"], cwd=tmp_path, env={})
    assert f"data directory path={tmp_path}/rel/store" in err, err
    assert (tmp_path / "rel" / "store" / "herald.sqlite").exists()


def test_the_default_data_dir_is_systemds_state_directory_when_set(tmp_path):
    state = tmp_path / "state"
    err = _serve_until_listening([], cwd=tmp_path, env={"STATE_DIRECTORY": str(state)})
    assert f"data directory path={state}" in err, err
    assert (state / "herald.sqlite").exists() and not (tmp_path / "data").exists()


# Misspellings (issue 28): refused or warned, never ignored in silence, with
# the nearest setting named in the spelling of the place it was given.

@pytest.mark.parametrize("args,needle", [
    (["--grace-second", "3"], "did you mean '--grace-seconds'?"),
    (["--Port", "3"], "did you mean '--port'?"),
    (["--grace_seconds=3"], "did you mean '--grace-seconds'?"),
])
def test_a_misspelled_flag_names_the_nearest_setting(tmp_path, args, needle):
    error = one_error_line(run_serve([*args, "--data-dir", str(tmp_path)]))
    assert needle in error, error


def test_a_flag_far_from_every_setting_gets_no_guess(tmp_path):
    error = one_error_line(run_serve(["--zzqqxxyy", "3", "--data-dir", str(tmp_path)]))
    assert "Unknown option '--zzqqxxyy'" in error and "did you mean" not in error, error


@pytest.mark.parametrize("line,needle", [
    ("grace_seconds = 3", 'did you mean "grace-seconds"?'),
    ("HERALD_PORT = 3", 'did you mean "port"?'),
    ("portt = 3", 'did you mean "port"?'),
])
def test_a_config_key_in_another_spelling_names_the_key(tmp_path, line, needle):
    config = tmp_path / "herald.conf"
    config.write_text(line + "\n")
    error = one_error_line(run_serve(["--check-config", "--config", str(config), "--data-dir", str(tmp_path / "d")]))
    assert "herald.conf:1" in error and needle in error, error


def test_an_unknown_herald_variable_is_warned_with_the_nearest(tmp_path):
    result = run_serve(["--check-config", "--data-dir", str(tmp_path / "d")],
                       env={"HERALD_GRACE_SECOND": "3", "HERALD_NOT_A_THING_AT_ALL": "1",
                            "HERALD_APNS_ROUTE": "x", "HERALD_BIN": "/bin/true", "HERALD_CONFIG": ""})
    assert result.returncode == 0, result.stderr
    assert "configuration OK, with 3 warning(s) above" in result.stdout, result.stdout
    err = result.stderr
    assert "HERALD_GRACE_SECOND is not a setting" in err and "did you mean HERALD_GRACE_SECONDS?" in err, err
    assert "HERALD_NOT_A_THING_AT_ALL is not a setting" in err, err
    assert "--apns-route is a list" in err, err
    # The repository's own tooling variables and the config path are not settings and not warned about.
    assert "HERALD_BIN" not in err and "HERALD_CONFIG" not in err, err


def test_known_variables_give_no_warning(tmp_path):
    result = run_serve(["--check-config", "--data-dir", str(tmp_path / "d")], env={"HERALD_GRACE_SECONDS": "3"})
    assert result.returncode == 0, result.stderr
    assert "configuration OK" in result.stdout and "warning" not in result.stdout + result.stderr


def test_a_mistyped_subcommand_names_the_subcommand(tmp_path):
    result = subprocess.run([herald_binary(), "serv"], capture_output=True, text=True, timeout=60,
                            env={k: v for k, v in os.environ.items() if not k.startswith("HERALD_")})
    error = one_error_line(result)
    assert "did you mean `herald serve`?" in error, error


def test_run_script_refuses_a_taken_port_before_building(taken_port):
    """scripts/run.sh checks the port before installing or building (a long
    first build must not end in "Address already in use")."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = subprocess.run(["bash", os.path.join(root, "scripts", "run.sh"), "--port", str(taken_port)],
                            capture_output=True, text=True, timeout=60, cwd=root,
                            env={k: v for k, v in os.environ.items() if not k.startswith("HERALD_")})
    assert result.returncode == 1, result
    assert f"127.0.0.1:{taken_port}" in result.stderr and "--port 50052" in result.stderr, result.stderr
    assert "swift build" not in result.stdout + result.stderr
