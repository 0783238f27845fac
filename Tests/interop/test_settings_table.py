"""`herald serve`'s settings table (issue 25 item 4): every setting is
declared once in Sources/herald/ServeSettings.swift, and its flag,
environment variable, config-file key, checks, `--help` line and the
reference table in docs/CONFIGURATION.md are derived from it."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from conftest import ROOT, herald_binary

BEGIN = "<!-- BEGIN GENERATED: herald settings --markdown -->"
END = "<!-- END GENERATED: herald settings --markdown -->"


def clean_env(extra=None):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    return {**environment, **(extra or {})}


def herald(args, env=None):
    return subprocess.run([herald_binary(), *args], capture_output=True, text=True, timeout=60, env=clean_env(env))


def check_config(tmp_path, args=(), env=None, config=None):
    extra = []
    if config is not None:
        path = tmp_path / "herald.conf"
        path.write_text(config)
        extra = ["--config", str(path)]
    return herald(["serve", "--check-config", "--data-dir", str(tmp_path / "data"), *extra, *args], env=env)


def one_error_line(result) -> str:
    assert result.returncode != 0, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def table_rows():
    """(flag name, environment variable or None, value, default) per row of the generated table."""
    out = herald(["settings", "--markdown"])
    assert out.returncode == 0, out.stderr
    rows = []
    serve_table = out.stdout.split("\n\n")[0]  # the other commands' tables follow, flags only
    for line in serve_table.splitlines():
        match = re.match(r"^\| `--([a-z0-9-]+)` \| (`(HERALD_[A-Z0-9_]+)`|—) \| ([^|]*) \| (`([^`]*)`|—) \|", line)
        if match:
            rows.append((match.group(1), match.group(3), match.group(4).strip(), match.group(6)))
    return rows


# Drift: the docs hold exactly what the binary derives from the table.

def test_the_docs_reference_table_is_the_generated_one():
    generated = herald(["settings", "--markdown"]).stdout
    docs = (ROOT / "docs" / "CONFIGURATION.md").read_text()
    assert BEGIN in docs and END in docs, "docs/CONFIGURATION.md lost its generated-table markers"
    block = docs[docs.index(BEGIN):docs.index(END) + len(END)] + "\n"
    assert block == generated, (
        "docs/CONFIGURATION.md's settings table drifted from the table in Sources/herald/ServeSettings.swift; "
        "regenerate it with `herald settings --markdown`")


def test_every_row_is_a_flag_an_environment_variable_and_a_help_line():
    rows = table_rows()
    assert len(rows) >= 50, rows
    help_text = herald(["serve", "--help"]).stdout
    for name, variable, value, _ in rows:
        assert f"--{name}" in help_text, name
        if "repeatable" in value:
            assert variable is None, name  # lists come from flags and config lines only
        else:
            assert variable == "HERALD_" + name.upper().replace("-", "_"), (name, variable)
            assert variable in help_text, name


def test_the_reloadable_rows_are_the_files_sighup_re_reads():
    # ConfigReload.swift re-reads the tokens file, the APNs and FCM routes
    # files, the delivery policies file and the TLS files; test_reload.py,
    # test_delivery_policy_config.py and test_tls.py test that.
    out = herald(["settings", "--markdown"]).stdout.split("\n\n")[0]
    reloadable = {m.group(1) for m in re.finditer(r"^\| `--([a-z0-9-]+)` \|[^|]*\|[^|]*\|[^|]*\| re-read \|", out, re.M)}
    assert reloadable == {"tokens-file", "apns-routes-file", "fcm-routes-file", "delivery-policies-file", "tls-cert", "tls-key",
                          "tls-client-ca"}


def numeric_defaults():
    return [(name, default) for name, _, value, default in table_rows()
            if value in ("integer", "number") and default is not None and re.fullmatch(r"-?[0-9.]+", default)]


def test_every_numeric_default_is_a_valid_value_of_every_layer(tmp_path):
    defaults = numeric_defaults()
    assert len(defaults) >= 30, defaults
    as_file = check_config(tmp_path, config="".join(f"{name} = {value}\n" for name, value in defaults))
    assert as_file.returncode == 0 and "configuration OK" in as_file.stdout, as_file.stderr
    as_env = check_config(tmp_path, env={"HERALD_" + n.upper().replace("-", "_"): v for n, v in defaults})
    assert as_env.returncode == 0, as_env.stderr
    as_flags = check_config(tmp_path, [arg for name, value in defaults for arg in (f"--{name}", value)])
    assert as_flags.returncode == 0, as_flags.stderr


# Hostile values, a few rows each layer: each error names its source.

@pytest.mark.parametrize("line,needle", [
    ("max-queued-reads = many", 'must be an integer, got "many"'),
    ("read-timeout = soon", 'must be a number, got "soon"'),
    ("route-queue = 257", "0...256"),
    ("lease-seconds = 2", "3...3600"),
    ("unauthenticated-buffer-kib = 0", "1...1048576"),
    ("allow-plaintext = maybe", 'must be true or false, got "maybe"'),
    ("durability = fast", "full or process"),
    ("fcm-sim-fault = meteor", "meteor"),
])
def test_a_bad_config_value_names_its_line_and_key(tmp_path, line, needle):
    error = one_error_line(check_config(tmp_path, config=f"\n{line}\n"))
    key = line.split("=")[0].strip()
    assert f"herald.conf:2: {key}" in error and needle in error, error


@pytest.mark.parametrize("name,value,needle", [
    ("HERALD_READ_TIMEOUT", "soon", "a number"),
    ("HERALD_LEASE_SECONDS", "2", "3...3600"),
    ("HERALD_ADMIN_MAX_CONNECTIONS_PER_PEER", "33", "1...32"),
    ("HERALD_ADMIN_TLS", "perhaps", "true or false"),
])
def test_a_bad_environment_value_names_the_variable(tmp_path, name, value, needle):
    error = one_error_line(check_config(tmp_path, env={name: value}))
    assert name in error and needle in error and value in error, error


@pytest.mark.parametrize("args,needle", [
    (["--route-queue", "x"], '--route-queue: must be an integer, got "x"'),
    (["--admin-max-connections-per-peer", "33"], "--admin-max-connections-per-peer: must be 1...32"),
    (["--idle-timeout", "0"], "--idle-timeout: must be more than 0 and at most 86400 seconds"),
    (["--colour", "blue"], "Unknown option '--colour'"),
    (["--port"], "Missing value for '--port"),
    (["--host", "--port", "0"], "Missing value for '--host"),
    (["stray"], "Unexpected argument 'stray'"),
    (["--allow-plaintext=yes"], "'--allow-plaintext' does not take a value"),
])
def test_a_bad_flag_is_one_clear_line(tmp_path, args, needle):
    error = one_error_line(check_config(tmp_path, args))
    assert needle in error, error


def test_a_flag_value_may_follow_an_equals_sign(tmp_path):
    error = one_error_line(check_config(tmp_path, ["--port=70000"]))
    assert "--port: must be 0...65535, got 70000" in error, error


def test_an_unknown_config_key_names_its_line(tmp_path):
    error = one_error_line(check_config(tmp_path, config="port = 0\nprot = 1\n"))
    assert 'herald.conf:2: unknown key "prot"' in error, error


def test_a_single_valued_key_given_twice_in_the_config_file_is_refused(tmp_path):
    error = one_error_line(check_config(tmp_path, config="port = 0\ngrace-seconds = 5\nport = 1\n"))
    assert "herald.conf:3: port: given twice (first on line 1)" in error, error


def test_a_list_key_may_repeat_in_the_config_file(tmp_path):
    result = check_config(tmp_path, config="sim-bad-token = aa\nsim-bad-token = bb\n")
    assert result.returncode == 0 and "configuration OK" in result.stdout, result.stderr


def test_herald_config_names_the_file_when_no_flag_does(tmp_path):
    config = tmp_path / "env.conf"
    config.write_text("port = 99999\n")
    error = one_error_line(check_config(tmp_path, env={"HERALD_CONFIG": str(config)}))
    assert f"{config}:1: port" in error and "99999" in error, error
    # --config wins over HERALD_CONFIG.
    good = tmp_path / "good.conf"
    good.write_text("port = 0\n")
    result = check_config(tmp_path, ["--config", str(good)], env={"HERALD_CONFIG": str(config)})
    assert result.returncode == 0, result.stderr


# The other commands' settings come from their tables too (flags only).

@pytest.mark.parametrize("args,needle", [
    (["apns-sim", "--error-status", "404"], "--error-status: must be 500 or 503, got 404"),
    (["apns-sim", "--error-rate", "2"], "--error-rate: must be within 0...1"),
    (["apns-sim", "--port", "many"], '--port: must be an integer, got "many"'),
    (["apns-sim", "--colour", "blue"], "Unknown option '--colour'"),
    (["fcm-sim", "--account", "project=p", "--quota-per-minute", "0"], "--quota-per-minute: must be positive, got 0"),
    (["fcm-sim", "--account", "project=p", "--fault", "meteor"], "unknown kind meteor"),
    (["fcm-sim", "--bench-connect", "127.0.0.1:1", "--bench-count", "0"], "--bench-count: must be positive"),
    (["backup", "x.bak"], "Missing expected argument '--data-dir <DIR>'"),
    (["backup", "--data-dir", "d"], "Missing expected argument '<file>'"),
    (["backup", "--data-dir", "d", "x.bak", "y.bak"], "Unexpected argument 'y.bak'"),
    (["tls-selfsigned", "--out", "o", "--days", "0"], "--days: must be 1...3650, got 0"),
    (["tls-selfsigned", "--days", "3"], "Missing expected argument '--out <DIR>'"),
])
def test_a_subcommand_bad_flag_is_one_clear_line(tmp_path, args, needle):
    result = subprocess.run([herald_binary(), *args], capture_output=True, text=True, timeout=60,
                            env=clean_env(), cwd=tmp_path)
    error = one_error_line(result)
    assert needle in error, error
    assert not any(tmp_path.iterdir()), list(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize("command,flags", [
    ("apns-sim", ["--error-status", "--bench-p8", "--hang"]),
    ("fcm-sim", ["--account", "--fault", "--bench-service-account"]),
    ("backup", ["--data-dir"]),
    ("tls-selfsigned", ["--out", "--host", "--days"]),
])
def test_a_subcommand_help_lists_its_table(command, flags):
    result = herald([command, "--help"])
    assert result.returncode == 0, result.stderr
    for flag in flags:
        assert flag in result.stdout, (command, flag)
