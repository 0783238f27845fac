"""The ops kit in deploy/: Prometheus rules that promtool accepts and whose
unit tests pass, and every metric name an alert, a recording rule or a
Grafana panel queries exported by the real binary after realistic traffic
(APNs and FCM simulators, a route whose credentials APNs refuses, a cancel,
a reported event); a wrong name in a copy is reported; a real Prometheus
evaluates the rules on that server."""
from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import ROOT, routed_apns_simulator, start_herald
from test_observability import get

PROMETHEUS = ROOT / "deploy" / "prometheus"
ALERTS = PROMETHEUS / "herald-alerts.yml"
RECORDING = PROMETHEUS / "herald-recording.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "herald-dashboard.json"
RUNBOOK = ROOT / "docs" / "RUNBOOK.md"
GOOD, BAD = "com.example.ops", "com.example.opsbroken"
ANDROID_OK = "fcmOk1:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx" + "K3a_9-Zq" * 15
ANDROID_GONE = "fcmGo2:APA91bE4rTq9-kLmNoPqRsTuVwXyZ_0123456" + "Lm_7-Xy0" * 15


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        message = "promtool not found (Debian package `prometheus`; scripts/bootstrap.sh --test installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


# -- a small PromQL identifier extractor ------------------------------------------

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or",
            "unless", "inf", "nan", "atan2"}
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.IGNORECASE)
STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
NUMBERS = re.compile(r"(?<![\w:])(?:0x[0-9a-f]+|\d+(?:\.\d*)?(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?)", re.IGNORECASE)
IDENTIFIER = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: strings, label matchers,
    ranges, grouping label lists, numbers, functions and keywords removed."""
    text = STRINGS.sub(" ", expr)
    text = re.sub(r"\{[^{}]*\}", " ", text)
    text = re.sub(r"\[[^\[\]]*\]", " ", text)
    text = re.sub(r"\b(?:offset\s+-?|@\s*)[0-9a-z.()]+", " ", text, flags=re.IGNORECASE)
    text = GROUPING.sub(" ", text)
    text = NUMBERS.sub(" ", text)
    names = set()
    for match in IDENTIFIER.finditer(text):
        rest = text[match.end():].lstrip()
        if rest.startswith("("):
            continue  # a function or an aggregation
        if match.group().lower() in KEYWORDS:
            continue
        names.add(match.group())
    return names


@pytest.mark.parametrize("expr, names", [
    ('sum by (job, service) (rate(herald_deliveries_total{outcome=~"rejected|error"}[5m]))',
     {"herald_deliveries_total"}),
    ('histogram_quantile(0.99, sum by (le) (rate(a_bucket{job=~"$job"}[$__rate_interval])))', {"a_bucket"}),
    ('x > 1e12 and on (instance) y:z:rate5m offset 5m > bool 0.5', {"x", "y:z:rate5m"}),
    ('sum(a) without (instance) / ignoring (code) group_left (method) b', {"a", "b"}),
    ('count(ALERTS{alertname="by sum(not_a_metric)"}) or vector(0)', {"ALERTS"}),
    ('predict_linear(free[6h], 24 * 3600) < 0 unless absent(up)', {"free", "up"}),
])
def test_the_extractor_finds_exactly_the_metric_names(expr, names):
    assert metric_names(expr) == names


def rules(path: pathlib.Path) -> list[dict[str, str]]:
    """The rules of a Prometheus rule file, flattened: `record` or `alert`,
    `expr` and the labels' and annotations' keys as plain fields. A reader for
    the subset deploy/prometheus uses (no PyYAML in the test venv): one rule
    item per `- record:`/`- alert:`, scalars inline (plain or JSON-quoted)
    or folded (`>-`, the more-indented lines that follow, joined by spaces)."""
    found: list[dict[str, str]] = []
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        match = re.match(r"^(\s*)(?:- )?(record|alert|expr|severity|summary|description|runbook_url):\s*(.*)$", line)
        if not match:
            continue
        indent, key, value = len(match.group(1)), match.group(2), match.group(3)
        if key in ("record", "alert") and line.lstrip().startswith("- "):
            found.append({})
        if value in (">-", ">", "|", "|-"):
            block = []
            while index < len(lines) and (not lines[index].strip() or len(lines[index]) - len(lines[index].lstrip()) > indent):
                block.append(lines[index].strip())
                index += 1
            value = " ".join(part for part in block if part)
        elif value.startswith('"'):
            value = json.loads(value)
        assert found, f"{path}: {key} outside a rule"
        found[-1][key] = value
    return found


def rule_exprs(path: pathlib.Path) -> list[tuple[str, str]]:
    """(rule name, expression) of every rule in a rule file."""
    return [(rule.get("record") or rule["alert"], rule["expr"]) for rule in rules(path)]


def dashboard_exprs(path: pathlib.Path) -> list[tuple[str, str]]:
    """(panel title, expression) of every panel target and every query variable."""
    dashboard = json.loads(path.read_text())
    found = []

    def walk(panels):
        for panel in panels:
            for target in panel.get("targets", []):
                found.append((panel.get("title", "?"), target["expr"]))
            walk(panel.get("panels", []))

    walk(dashboard["panels"])
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
            match = re.fullmatch(r"label_values\((.*),\s*\w+\)", query.strip())
            found.append((f"${variable['name']}", match.group(1) if match else query))
    return found


def unknown_names(exported: set[str], alerts=ALERTS, recording=RECORDING, dashboard=DASHBOARD) -> list[str]:
    """Every (where, name) whose name neither the scrape, a recording rule nor
    Prometheus itself (`up`, `ALERTS`) provides."""
    recorded = {name for name, _ in rule_exprs(recording)}
    known = exported | recorded | {"up", "ALERTS", "ALERTS_FOR_STATE"}
    problems = []
    sources = ([(f"{recording.name}: {n}", e) for n, e in rule_exprs(recording)]
               + [(f"{alerts.name}: {n}", e) for n, e in rule_exprs(alerts)]
               + [(f"{dashboard.name}: {n}", e) for n, e in dashboard_exprs(dashboard)])
    for where, expr in sources:
        names = metric_names(expr)
        assert names, f"{where}: no metric in {expr!r}"
        problems += [f"{where}: {name}" for name in sorted(names - known)]
    return problems


# -- promtool ----------------------------------------------------------------------


def test_promtool_checks_the_rule_files():
    result = subprocess.run([promtool(), "check", "rules", str(RECORDING), str(ALERTS)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 8 rules found" in result.stdout


def test_promtool_unit_tests_pass():
    tests = sorted(str(p) for p in (PROMETHEUS / "tests").glob("*.yml"))
    assert len(tests) >= 2
    result = subprocess.run([promtool(), "test", "rules", *tests], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(tests)


def test_promtool_catches_an_alert_that_fires_on_a_healthy_series(tmp_path):
    """The unit tests can fail: a threshold lowered so the healthy store
    series fires too."""
    (tmp_path / "tests").mkdir()
    shutil.copy(RECORDING, tmp_path)
    alerts = ALERTS.read_text()
    assert "p99_5m > 0.25" in alerts
    (tmp_path / ALERTS.name).write_text(alerts.replace("p99_5m > 0.25", "p99_5m > 0.0001"))
    shutil.copy(PROMETHEUS / "tests" / "herald-alerts.test.yml", tmp_path / "tests")
    result = subprocess.run([promtool(), "test", "rules", str(tmp_path / "tests" / "herald-alerts.test.yml")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and 'instance="h2:9090"' in result.stdout + result.stderr


def test_every_alert_has_severity_annotations_and_a_runbook_section():
    anchors = {re.sub(r"[^a-z0-9-]", "", line[3:].strip().lower().replace(" ", "-"))
               for line in RUNBOOK.read_text().splitlines() if line.startswith("## ")}
    alerts = [rule for rule in rules(ALERTS) if "alert" in rule]
    assert len(alerts) == 8 and len(rules(RECORDING)) == 17  # as promtool counts them
    assert {a["alert"] for a in alerts} >= {"HeraldDown", "HeraldNotReady", "HeraldDueLagRising",
                                            "HeraldProviderFailureRatioHigh", "HeraldProviderAuthFailures",
                                            "HeraldStoreCommitSlow", "HeraldDiskFilling"}
    for alert in alerts:
        assert alert["severity"] in ("warning", "critical"), alert["alert"]
        assert alert["summary"] and alert["description"] and alert["expr"], alert["alert"]
        path, _, anchor = alert["runbook_url"].partition("#")
        assert path == "docs/RUNBOOK.md" and anchor == alert["alert"].lower() and anchor in anchors, alert["alert"]


# -- every queried name is exported ------------------------------------------------


def scrape_names(port: int) -> set[str]:
    status, body = get(port, "/metrics")
    assert status == 200
    return {sample.name for family in text_string_to_metric_families(body.decode()) for sample in family.samples}


@pytest.fixture
def simulator(tmp_path):
    yield from routed_apns_simulator(tmp_path, f"{GOOD},{BAD}")


@pytest.fixture
def driven(stubs, simulator, tmp_path):
    """A server, and the sample names of its `/metrics`, after traffic that
    makes every labelled family appear: iOS through an APNs route (accepted) and a wrong-team
    route (InvalidProviderToken), Android through the bundled FCM simulator
    (accepted, unregistered), a cancel, a reported event, refused calls."""
    common = f"key-id=ROUTEKEY01 key={simulator['p8']} env=production endpoint=127.0.0.1:{simulator['port']} " \
             f"ca={simulator['ca']}"
    server = start_herald("--admin-port", "0", "--grace-seconds", "0", "--fcm-sim-unregistered", ANDROID_GONE,
                          "--apns-route", f"team=TEAM123456 bundles={GOOD} {common}",
                          "--apns-route", f"team=WRONGTEAM1 bundles={BAD} {common}",
                          data_dir=str(tmp_path / "data"))
    try:
        t, d, p, r = stubs.types_pb2, stubs.device_pb2, stubs.push_pb2, stubs.read_pb2
        with grpc.insecure_channel(server.address) as channel:
            devices = stubs.device_pb2_grpc.DeviceServiceStub(channel)
            push = stubs.push_pb2_grpc.PushServiceStub(channel)
            content = t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="There"))
            registrations = [(GOOD, t.PLATFORM_IOS, "ios", "a1" * 32), (BAD, t.PLATFORM_IOS, "ios", "b2" * 32),
                             (GOOD, t.PLATFORM_ANDROID, "droid", ANDROID_OK),
                             (GOOD, t.PLATFORM_ANDROID, "droid", ANDROID_GONE)]
            for bundle, platform, user, token in registrations:
                devices.RegisterDevice(d.RegisterDeviceRequest(
                    bundle_id=bundle, platform=platform, user_id=user, device_token=token, locale="en"), timeout=10)

            def schedule(bundle, platform, user, key, **window):
                window = window or {"deliver_within_hours": 1}
                return push.Schedule(p.ScheduleRequest(
                    bundle_id=bundle, platform=platform, user_id=user, campaign_id="ops", idempotency_key=key,
                    delivery_method=t.DELIVERY_METHOD_TRADITIONAL, content=content, **window), timeout=10)

            schedule(GOOD, t.PLATFORM_IOS, "ios", "ops-ios")
            schedule(BAD, t.PLATFORM_IOS, "ios", "ops-broken")
            schedule(GOOD, t.PLATFORM_ANDROID, "droid", "ops-droid")
            later = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=2)).isoformat()
            schedule(GOOD, t.PLATFORM_IOS, "ios", "ops-later", deliver_after=later,
                     target_delivery_time=(dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=3)).isoformat())
            reply = push.Cancel(p.CancelRequest(bundle_id=GOOD, platform=t.PLATFORM_IOS, user_id="ios",
                                                campaign_id="ops", idempotency_key="ops-later"), timeout=10)
            assert reply.cancelled
            with pytest.raises(grpc.RpcError):
                push.Schedule(p.ScheduleRequest(platform=t.PLATFORM_IOS, user_id="nobody"), timeout=10)

            def state(key, bundle=GOOD):
                message = push.GetMessage(r.GetMessageRequest(bundle_id=bundle, idempotency_key=key), timeout=10)
                return t.MessageState.Name(message.message.state)

            deadline = time.monotonic() + 30
            while (states := (state("ops-ios"), state("ops-droid"), state("ops-broken", BAD))) != (
                    "MESSAGE_STATE_SENT", "MESSAGE_STATE_SENT", "MESSAGE_STATE_FAILED"):
                assert time.monotonic() < deadline, states
                time.sleep(0.05)
            push.ReportEvent(p.ReportEventRequest(
                bundle_id=GOOD, platform=t.PLATFORM_IOS, user_id="ios", idempotency_key="ops-ios",
                event=p.MESSAGE_EVENT_OPENED, device_token="a1" * 32), timeout=10)

        # The pools' refusals reach /metrics with the next snapshot (about a second).
        wanted = {"herald_provider_auth_failures_total", "herald_deliveries_total", "herald_data_dir_available_bytes"}
        deadline = time.monotonic() + 15
        while not wanted <= (names := scrape_names(server.admin_port)):
            assert time.monotonic() < deadline, wanted - names
            time.sleep(0.2)
        _, body = get(server.admin_port, "/metrics")
        text = body.decode()
        for line in ('herald_deliveries_total{service="apns",outcome="accepted"}',
                     'herald_deliveries_total{service="fcm",outcome="accepted"}',
                     'herald_deliveries_total{service="fcm",outcome="unregistered"}',
                     'reason="InvalidProviderToken"', "herald_ready 1.0"):
            assert line in text, line
        yield server, names
    finally:
        assert server.stop() == 0


@pytest.fixture
def exported(driven) -> set[str]:
    return driven[1]


def test_every_queried_metric_name_is_exported(exported):
    assert unknown_names(exported) == []


def test_a_wrong_metric_name_is_reported(exported, tmp_path):
    """Hostile: a typo in a dashboard panel and in an alert, in temp copies, is found."""
    dashboard = json.loads(DASHBOARD.read_text())
    panel = next(p for p in dashboard["panels"] if p.get("targets"))
    panel["targets"][0]["expr"] = 'sum(rate(herald_deliveries_totl{job=~"$job"}[5m]))'
    (tmp_path / "dashboard.json").write_text(json.dumps(dashboard))
    alerts = ALERTS.read_text()
    assert "herald_ready == 0" in alerts
    (tmp_path / "alerts.yml").write_text(alerts.replace("herald_ready == 0", "herald_readyz == 0"))
    problems = unknown_names(exported, alerts=tmp_path / "alerts.yml", dashboard=tmp_path / "dashboard.json")
    assert problems == ["alerts.yml: HeraldNotReady: herald_readyz",
                        f"dashboard.json: {panel['title']}: herald_deliveries_totl"], problems


def test_the_dashboard_is_importable_grafana_json():
    """Schema 39, the data source a variable every panel uses, job and
    instance variables every query filters on, panels inside the 24-column
    grid with unique ids."""
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["schemaVersion"] == 39 and dashboard["uid"] and dashboard["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource" and variables["DS_PROMETHEUS"]["query"] == "prometheus"
    assert {"job", "instance"} <= variables.keys()
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    titles = set()
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24 and grid["h"] > 0, panel["title"]
        if panel["type"] == "row":
            continue
        titles.add(panel["title"])
        assert panel["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${DS_PROMETHEUS}"
            assert 'job=~"$job"' in target["expr"] and 'instance=~"$instance"' in target["expr"], target["expr"]
    for wanted in ("Device requests by provider and outcome", "Dispatch lateness (send time minus due time)",
                   "Oldest due lag", "Store commit latency", "Pool connections", "Streams in flight",
                   "Holds by reason", "Suppressions by reason", "Requests by method and code", "Latency p99 by method"):
        assert wanted in titles


def test_every_dashboard_query_parses_as_promql(tmp_path):
    """promtool parses each panel's query (Grafana's variables substituted)
    as a recording rule's expression."""
    exprs = [expr for title, expr in dashboard_exprs(DASHBOARD) if not title.startswith("$")]
    lines = ["groups:", "  - name: dashboard", "    rules:"]
    for number, expr in enumerate(exprs):
        expr = expr.replace("$__rate_interval", "5m").replace("$job", ".+").replace("$instance", ".+")
        assert "$" not in expr, expr
        lines += [f"      - record: dashboard:query:{number}", f"        expr: {json.dumps(expr)}"]
    (tmp_path / "dashboard-rules.yml").write_text("\n".join(lines) + "\n")
    result = subprocess.run([promtool(), "check", "rules", str(tmp_path / "dashboard-rules.yml")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and f"SUCCESS: {len(exprs)} rules found" in result.stdout, \
        result.stdout + result.stderr
    # Hostile: an unbalanced query is refused, so the check can fail.
    (tmp_path / "broken.yml").write_text("\n".join(lines[:3] + ["      - record: dashboard:broken",
                                                                 '        expr: "sum(rate(herald_ready[5m])"']) + "\n")
    broken = subprocess.run([promtool(), "check", "rules", str(tmp_path / "broken.yml")],
                            capture_output=True, text=True, timeout=60)
    assert broken.returncode != 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_real_prometheus_evaluates_the_rules_on_the_real_server(driven, tmp_path):
    """Prometheus (Debian's, loopback, 1 s scrapes and evaluations) loads both
    rule files and scrapes the driven server: recording rules produce series
    from its metrics; the wrong-team route's refusals fire
    HeraldProviderAuthFailures at once; HeraldDown and HeraldNotReady stay silent."""
    binary = shutil.which("prometheus")
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("prometheus not found (Debian package `prometheus`)")
        pytest.skip("prometheus not found")
    server, _ = driven
    config = tmp_path / "prometheus.yml"
    config.write_text(json.dumps({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RECORDING), str(ALERTS)],
        "scrape_configs": [{"job_name": "herald", "static_configs": [{"targets": [f"127.0.0.1:{server.admin_port}"]}]}],
    }))
    port = free_port()
    proc = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log: list[str] = []
    threading.Thread(target=lambda: log.extend(proc.stderr), daemon=True).start()

    def query(expr: str) -> list[dict]:
        url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=10) as reply:
            return json.load(reply)["data"]["result"]

    def eventually(expr: str, check, what: str) -> list[dict]:
        deadline = time.monotonic() + 60
        while True:
            try:
                result = query(expr)
                if check(result):
                    return result
            except OSError:
                result = None  # not listening yet
            assert proc.poll() is None, "".join(log[-20:])
            assert time.monotonic() < deadline, f"{what}: {expr} = {result}"
            time.sleep(0.2)

    try:
        eventually('up{job="herald"}', lambda r: r and r[0]["value"][1] == "1", "scraped")
        accepted = eventually('instance_service_outcome:herald_deliveries:rate5m{outcome="accepted"}',
                              lambda r: {s["metric"]["service"] for s in r} == {"apns", "fcm"}, "recorded")
        assert all(s["metric"]["job"] == "herald" for s in accepted)
        eventually("instance:herald_store_commit_duration_seconds:p99_5m", lambda r: len(r) == 1, "commit p99")
        eventually("instance:herald_data_dir_available_bytes:ratio",
                   lambda r: len(r) == 1 and 0 < float(r[0]["value"][1]) <= 1, "disk ratio")
        firing = eventually('ALERTS{alertname="HeraldProviderAuthFailures",alertstate="firing"}',
                            lambda r: len(r) == 1, "auth alert")
        labels = firing[0]["metric"]
        assert labels["service"] == "apns" and labels["reason"] == "InvalidProviderToken", labels
        assert labels["severity"] == "critical"
        assert query('ALERTS{alertname=~"HeraldDown|HeraldNotReady|HeraldStoreCommitSlow|HeraldDisk.*"}') == []
    finally:
        proc.terminate()
        proc.wait(timeout=30)
