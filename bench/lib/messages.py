"""Read side budgets (issue 10): on a store of N messages (default 1M, all of
one campaign), GetMessage at -c16 -m32 beside durable Schedule in the same
run (a read must cost less than a durable write), and CampaignReport over the
whole campaign (budget <= 1 s).

The store is filled directly with SQL (one transaction, Python sqlite3) into
the schema `herald serve` created: every column and index of the v4 schema,
the state-count triggers, the funnel (computed here, as the insert trigger
would), realistic request blobs. Messages are finished
(SENT, DISPLAYED, FAILED, ...) so none is due and the restart only reads the
(empty) due index. Every gRPC body is checked with grpcio before h2load runs
it (h2load counts HTTP 200, and a gRPC error is HTTP 200 too)."""
from __future__ import annotations

import argparse
import importlib
import os
import random
import sqlite3
import statistics
import time
import uuid

from herald_bench import Herald, bench_tmp, framed, h2load, loadavg, pct, rmtree, schedule_request, stubs

CAMPAIGN = "bench-campaign"
STATES = [("sent", 0.45), ("displayed", 0.30), ("failed", 0.05), ("no_devices", 0.10), ("expired", 0.05), ("cancelled", 0.05)]


def fill(path: str, n: int, users: int, request: bytes) -> tuple[str, str]:
    """Inserts n finished messages; returns (a message id, its user)."""
    rnd = random.Random(42)
    db = sqlite3.connect(path)
    db.execute("PRAGMA synchronous = OFF")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA cache_size = -262144")
    names = [s for s, _ in STATES]
    weights = [w for _, w in STATES]
    base = 1_800_000_000_000
    sample = None

    def rows():
        nonlocal sample
        for i in range(n):
            # Time-ordered like Herald's own ids (UUIDv7): appends to the id index.
            mid = str(uuid.UUID(int=(base + i * 10) << 80 | 0x7000 << 64 | rnd.getrandbits(62) | 1 << 63))
            user = f"user-{i % users:06d}"
            method = "context_aware" if rnd.random() < 0.5 else "traditional"
            state = rnd.choices(names, weights)[0]
            created = base + i * 10
            delivered = state in ("sent", "displayed")
            handed = created + 1000 if method == "context_aware" and delivered else None
            sent = created + 2000 if delivered and (method == "traditional" or rnd.random() < 0.3) else None
            if delivered and handed is None and sent is None:
                sent = created + 2000
            displayed = created + 3000 if state == "displayed" else None
            opened = created + 4000 if displayed and rnd.random() < 0.4 else None
            end = {"cancelled": 1, "failed": 2, "expired": 3, "no_devices": 4}.get(state, 0)
            funnel = end * 16 + (handed is not None) + 2 * (sent is not None) + 4 * (displayed is not None) + 8 * (opened is not None)
            if i == n // 2:
                sample = (mid, user)
            yield (mid, "com.example.app", "ios", user, CAMPAIGN, f"key-{i:08d}", method, 1 if i % 10 else 0,
                   created, created + 3_600_000, created + 1000, state, created, created + 5000, 1, None, None,
                   None, created + 1000 if delivered else None, None, request, handed, sent, displayed, opened, funnel)

    t0 = time.monotonic()
    with db:
        db.executemany(
            "INSERT INTO messages(id, bundle_id, platform, user_id, campaign_id, idempotency_key, delivery_method, ab_test,"
            " window_start, window_end, due_at, state, created_at, updated_at, attempts, last_error, provider_message_id,"
            " sending_since, send_started_at, push_started_at, request, handed_off_at, sent_at, displayed_at, opened_at, funnel)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows())
        db.execute("INSERT INTO message_keys(bundle_id, idempotency_key, message_id)"
                   " SELECT bundle_id, idempotency_key, id FROM messages")
        # Schema v14's campaign counts, as Herald's insert batch keeps them (no INSERT trigger).
        if db.execute("SELECT 1 FROM sqlite_schema WHERE name = 'campaign_funnel'").fetchone():
            db.execute("INSERT INTO campaign_funnel(bundle_id, campaign_id, delivery_method, ab_test, funnel, policy, n)"
                       " SELECT bundle_id, campaign_id, delivery_method, ab_test, funnel,"
                       " (deferred_at IS NOT NULL) + 2 * (state = 'suppressed'), count(*)"
                       " FROM messages GROUP BY 1, 2, 3, 4, 5, 6")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    print(f"filled {n} messages ({users} users, one campaign) in {time.monotonic() - t0:.1f} s; "
          f"database {os.path.getsize(path) / 1e6:.0f} MB")
    return sample


def run_h2load(label, h, body_path, n, c, m, path, tmp):
    r = h2load(h.address, body_path, n, c, m, path=path, log_file=os.path.join(tmp, f"{label}.log"))
    lat = r.get("lat_ms", [])
    print(f"{label:<12} -c{c} -m{m} n={n}: {r.get('req_s', 0):>9.0f} req/s  succeeded {r.get('succeeded')}/{n}  "
          f"p50 {pct(lat, 50):.2f} ms  p99 {pct(lat, 99):.2f} ms  (load {loadavg()})")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=10_000)
    ap.add_argument("-n", type=int, default=100_000, help="requests per h2load run")
    ap.add_argument("-c", type=int, default=16)
    ap.add_argument("-m", type=int, default=32)
    ap.add_argument("--report-runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    s = stubs()
    r = importlib.import_module("herald.v1.read_side_pb2")
    tmp = bench_tmp("herald-bench-messages-")
    data = os.path.join(tmp, "data")
    try:
        Herald(data).stop()  # creates the current schema
        mid, user = fill(os.path.join(data, "herald.sqlite"), a.messages, a.users,
                         schedule_request(user="user-000001").SerializeToString())
        h = Herald(data, "--durability", "full")
        print(f"restart on {a.messages} messages: listening after {h.startup_s:.2f} s")
        try:
            get = r.GetMessageRequest(bundle_id="com.example.app", message_id=mid)
            got = h.push().GetMessage(get, timeout=30)
            assert got.message.message_id == mid, got
            get_body = os.path.join(tmp, "get.bin")
            with open(get_body, "wb") as f:
                f.write(framed(get))
            sched = schedule_request(user="user-000042", key="", after=time.time() + 86_400)
            h.push().Schedule(sched, timeout=30)
            sched_body = os.path.join(tmp, "schedule.bin")
            with open(sched_body, "wb") as f:
                f.write(framed(sched))
            listed = h.push().ListMessages(r.ListMessagesRequest(bundle_id="com.example.app", user_id=user, page_size=100), timeout=30)
            assert len(listed.messages) == 100, len(listed.messages)

            # Warm-up, then alternating measured runs of each, same server.
            h2load(h.address, get_body, a.n // 10, a.c, a.m, path="/herald.v1.PushService/GetMessage")
            h2load(h.address, sched_body, a.n // 10, a.c, a.m)
            rates = {"GetMessage": [], "Schedule": []}
            for rnd in range(2):
                rates["GetMessage"].append(run_h2load("GetMessage", h, get_body, a.n, a.c, a.m, "/herald.v1.PushService/GetMessage", tmp)["req_s"])
                rates["Schedule"].append(run_h2load("Schedule", h, sched_body, a.n, a.c, a.m, "/herald.v1.PushService/Schedule", tmp)["req_s"])
            g, w = max(rates["GetMessage"]), max(rates["Schedule"])
            print(f"budget: GetMessage {g:.0f} req/s vs durable Schedule {w:.0f} req/s (best of 2 each) -> "
                  f"{'PASS' if g > w else 'FAIL'} (read must be faster than a durable write)")

            times = []
            for _ in range(a.report_runs):
                t0 = time.monotonic()
                report = h.push().CampaignReport(r.CampaignReportRequest(bundle_id="com.example.app", campaign_id=CAMPAIGN), timeout=120)
                times.append(time.monotonic() - t0)
            total = sum(c.scheduled for c in report.cohorts)
            assert total == a.messages, (total, a.messages)
            ab = report.ab_comparison
            print(f"CampaignReport over {total} messages: median {statistics.median(times) * 1000:.0f} ms, "
                  f"max {max(times) * 1000:.0f} ms ({a.report_runs} runs) -> {'PASS' if max(times) <= 1.0 else 'FAIL'} (budget <= 1 s)")
            print(f"  A/B: difference {ab.open_rate_difference:+.4f} [{ab.ci95_low:+.4f}, {ab.ci95_high:+.4f}] "
                  f"(n {ab.context_aware_delivered} / {ab.traditional_delivered})")
            print(f"RSS after: {h.proc_status().get('VmRSS')}")
        finally:
            code = h.stop()
            assert code == 0, f"herald exited {code}: {''.join(h.stderr_lines[-20:])}"
    finally:
        if not a.keep:
            rmtree(tmp)


if __name__ == "__main__":
    main()
