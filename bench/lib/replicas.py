"""Issue 13's budgets, PostgreSQL beside SQLite in one run (same binary, same
machine, the throwaway cluster from scripts/pg-test-cluster.sh, fsync on):

1. schedule  — durable Schedule (`--durability full`; PostgreSQL commits with
   its defaults, synchronous_commit on) through h2load `-c C -m M`, SQLite and
   PostgreSQL alternating for ROUNDS rounds; medians and the ratio (budget ≥ 0.6).
2. dispatch  — N messages all due at T0 for USERS users: one SQLite replica,
   then two PostgreSQL replicas on one database (Schedules split between them);
   the rate from the simulators' record files (first progress → all delivered),
   duplicates from the union of the two records (budget ≥ 0.8 × SQLite, 0 dups).
3. lateness  — RATE messages due per second for SECONDS seconds, one SQLite replica (reference), then the two
   PostgreSQL replicas (as bench/lib/lateness.py: bucket b is one user, due at
   T0 + b·STEP; lateness = arrival in either record − due); budget p99 ≤ 1 s.

Each server gets its own database (CREATE DATABASE, dropped at the end)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import threading
import time

from herald_bench import (Herald, bench_tmp, framed, h2load, loadavg, pct, register_users, rmtree, schedule_bulk,
                          schedule_request, tail_lines, token_for, wait_for)

URL = os.environ.get("HERALD_TEST_POSTGRES_URL", "")


class Database:
    """A fresh database on the cluster in HERALD_TEST_POSTGRES_URL."""

    def __init__(self, name: str):
        self.name = name
        base = URL.split("?", 1)[0]
        query = URL[len(base):]
        self.url = f"{base.rsplit('/', 1)[0]}/{name}{query}"
        self.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        self.psql(f"CREATE DATABASE {name}")

    @staticmethod
    def psql(sql: str):
        subprocess.run(["psql", URL, "-Xq", "-c", sql], check=True, capture_output=True, timeout=60)

    def scalar(self, sql: str) -> str:
        """One value from this database."""
        return subprocess.run(["psql", self.url, "-XqAt", "-c", sql], check=True, capture_output=True, text=True,
                              timeout=60).stdout.strip()

    def drop(self):
        self.psql(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def schedule_round(a, store: str) -> dict:
    tmp = bench_tmp("herald-bench-replicas-")
    db = Database(f"herald_bench_sched_{os.getpid()}") if store == "postgres" else None
    args = ["--durability", "full", "--log-level", "warning"]
    if db:
        args += ["--store", db.url, "--replica-id", "bench"]
    h = Herald(os.path.join(tmp, "data"), *args)
    try:
        req = schedule_request(user="user-000042", key="", after=time.time() + 86_400)
        body = os.path.join(tmp, "schedule.bin")
        with open(body, "wb") as f:
            f.write(framed(req))
        h.push().Schedule(req, timeout=10)  # grpcio: raises unless grpc-status 0
        w = h2load(h.address, body, a.warmup, a.c, a.m)
        cpu0 = h.cpu_seconds()
        r = h2load(h.address, body, a.schedule_n, a.c, a.m, log_file=os.path.join(tmp, "h2load.log"))
        cpu1 = h.cpu_seconds()
        expect = 1 + w.get("succeeded", 0) + r["succeeded"]
        stored = wait_for(lambda: (t := h.total()) == expect and t, 60, 0.25) or h.total()
        lat = r["lat_ms"]
        out = {"req_s": r["req_s"], "p50": pct(lat, 50), "p99": pct(lat, 99), "failed": r["failed"] + r["errored"],
               "stored_ok": stored == expect,
               "cpu_us": ((cpu1[0] - cpu0[0]) + (cpu1[1] - cpu0[1])) * 1e6 / max(1, r["succeeded"])}
        print(f"  schedule {store:8s}: {out['req_s']:>9,.0f} req/s  p50 {out['p50']:.2f} ms  p99 {out['p99']:.2f} ms  "
              f"server CPU {out['cpu_us']:.1f} µs/req  failed {out['failed']}  "
              f"stored {'OK' if out['stored_ok'] else f'MISMATCH {stored} != {expect}'}  loadavg {loadavg()}")
        return out
    finally:
        h.stop()
        if db:
            db.drop()
        rmtree(tmp)


def record_lines(paths):
    out = []
    for p in paths:
        if os.path.exists(p):
            with open(p, "rb") as f:
                out.extend(f.read().splitlines())
    return out


def postgres_cpu_seconds() -> float | None:
    """user + sys seconds of the throwaway cluster's processes (the postmaster,
    its live children, and the children it has reaped), or None without
    HERALD_TEST_POSTGRES_DIR."""
    pg_dir = os.environ.get("HERALD_TEST_POSTGRES_DIR", "")
    try:
        with open(os.path.join(pg_dir, "data", "postmaster.pid")) as f:
            postmaster = int(f.readline())
    except (OSError, ValueError):
        return None
    hz = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile: its time is in the postmaster's reaped children's
        if int(pid) == postmaster:
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        elif int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / hz


def dispatch_run(a, replicas: int, server_args=(), lead: float | None = None) -> dict:
    """SQLite with replicas == 1 and no database; PostgreSQL otherwise.
    `server_args` go to every replica; `lead` is T0's distance from the first
    Schedule (default n/3,000 + 5 s). Returns the rate, duplicates, and the CPU
    per delivered message (µs) of the replicas (`cpu_us`) and of the
    PostgreSQL server (`pg_cpu_us`, None when unknown) from T0 − 0.5 s to
    the last delivery."""
    label = "sqlite, 1 replica" if replicas == 0 else f"postgres, {replicas} replicas"
    tmp = bench_tmp("herald-bench-replicas-")
    db = Database(f"herald_bench_disp_{os.getpid()}") if replicas else None
    recs = [os.path.join(tmp, f"sim-{i}.jsonl") for i in range(max(1, replicas))]
    servers = []
    try:
        for i, rec in enumerate(recs):
            args = ["--grace-seconds", "0", "--log-level", "warning", "--sim-record", rec, *server_args]
            if db:
                args += ["--store", db.url, "--replica-id", f"r{i}"]
            servers.append(Herald(os.path.join(tmp, f"data-{i}"), *args))
        users = [f"dispatch-user-{i:04d}" for i in range(a.users)]
        register_users(servers[0], users)
        per = a.n // a.users
        n = per * a.users
        t0 = time.time() + (lead or n / 3_000 + 5)
        t_sched = time.monotonic()
        ok = 0
        for j, u in enumerate(users):
            ok += schedule_bulk(servers[j % len(servers)], tmp, u, per, after=t0)["succeeded"]
        print(f"  scheduled {ok}/{n} in {time.monotonic() - t_sched:.1f} s; T0 in {t0 - time.time():.1f} s")
        if time.time() >= t0:
            print(f"  WARNING: scheduling ran past T0; use a smaller -n")
        wait_for(lambda: time.time() >= t0 - 0.5, 300, 0.05)
        cpu0 = [h.cpu_seconds() for h in servers]
        pg0 = postgres_cpu_seconds() if db else None
        samples = []
        deadline = time.monotonic() + a.timeout
        while time.monotonic() < deadline:
            v = len(record_lines(recs))
            samples.append((time.time(), v))
            if v >= ok:
                break
            time.sleep(0.1)
        cpu1 = [h.cpu_seconds() for h in servers]
        pg1 = postgres_cpu_seconds() if db else None
        lines = record_lines(recs)
        keys = [json.loads(line)["payload"].get("ctx_idempotency_key") for line in lines]
        dups = len(keys) - len(set(keys))
        first = next((i for i, (_, v) in enumerate(samples) if v > 0), None)
        t_first = samples[first - 1][0] if first else t0
        t_last = samples[-1][0]
        rate = len(set(keys)) / max(1e-9, t_last - t_first)
        # Pushes counted against their users' caps (a policy with a cap counts every one).
        # (A build before the policy ledger, PostgreSQL schema v6, has no such table.)
        has_ledger = db and db.scalar("SELECT to_regclass('counted_sends') IS NOT NULL") == "t"
        counted = int(db.scalar("SELECT count(*) FROM counted_sends")) if has_ledger else None
        done = max(1, len(set(keys)))
        cpu_us = sum(c1[0] - c0[0] + c1[1] - c0[1] for c0, c1 in zip(cpu0, cpu1)) / done * 1e6
        pg_cpu_us = (pg1 - pg0) / done * 1e6 if pg0 is not None and pg1 is not None else None
        pg_text = (f", PostgreSQL {pg_cpu_us:.0f} µs; {counted} counted sends" if pg_cpu_us is not None else
                   f"; {counted} counted sends" if counted is not None else "")
        print(f"  dispatch {label}: {len(set(keys))}/{ok} delivered, {dups} duplicates, first progress→all "
              f"{t_last - t_first:.2f} s → {rate:,.0f} msg/s; CPU per message: replicas {cpu_us:.0f} µs{pg_text}  "
              f"loadavg {loadavg()}")
        return {"rate": rate, "dups": dups, "delivered": len(set(keys)), "ok": ok, "cpu_us": cpu_us,
                "pg_cpu_us": pg_cpu_us, "counted": counted}
    finally:
        for h in servers:
            h.stop()
        if db:
            db.drop()
        rmtree(tmp)


def lateness_run(a, replicas: int) -> dict:
    buckets = int(round(a.seconds / a.step))
    per = int(round(a.rate * a.step))
    tmp = bench_tmp("herald-bench-replicas-")
    db = Database(f"herald_bench_late_{os.getpid()}") if replicas else None
    recs = [os.path.join(tmp, f"sim-{i}.jsonl") for i in range(max(1, replicas))]
    servers = []
    stop = threading.Event()
    late: list[float] = []
    by_bucket: dict[int, list[float]] = {}
    lock = threading.Lock()
    try:
        for i, rec in enumerate(recs):
            store = ["--store", db.url, "--replica-id", f"r{i}"] if db else []
            servers.append(Herald(os.path.join(tmp, f"data-{i}"), "--grace-seconds", "0", "--log-level", "warning",
                                  "--sim-record", rec, *store))
        users = [f"late-user-{b:04d}" for b in range(buckets)]
        register_users(servers[0], users)
        n = buckets * per
        t0 = time.time() + n / 3_000 + 5
        due = {token_for(b): t0 + b * a.step for b in range(buckets)}
        bucket_of = {token_for(b): b for b in range(buckets)}
        ok = 0
        for b, u in enumerate(users):
            ok += schedule_bulk(servers[b % len(servers)], tmp, u, per, after=due[token_for(b)])["succeeded"]
        if time.time() >= t0:
            print("  WARNING: scheduling ran past T0: lateness figures are invalid")

        def arrived(now, lines):
            tokens = [json.loads(line)["device_token"] for line in lines]
            with lock:
                for token in tokens:
                    late.append(now - due[token])
                    by_bucket.setdefault(bucket_of[token], []).append(now - due[token])

        def tail(path):
            tail_lines(path, stop, arrived)

        threads = [threading.Thread(target=tail, args=(p,), daemon=True) for p in recs]
        for th in threads:
            th.start()
        deadline = time.monotonic() + a.timeout + (t0 - time.time())
        while len(late) < ok and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        for th in threads:
            th.join(5)
        got = sorted(late)
        out = {"p50": pct(got, 50), "p99": pct(got, 99), "max": got[-1], "delivered": len(got), "ok": ok}
        label = f"postgres, {replicas} replicas" if replicas else "sqlite, 1 replica"
        print(f"  lateness {label}, {a.rate}/s due for {a.seconds} s: delivered {len(got)}/{ok}; "
              f"lateness s p50 {out['p50']:.3f} p99 {out['p99']:.3f} max {out['max']:.3f}  loadavg {loadavg()}")
        # How lateness grows over the run: the median of each second's buckets.
        per_second = max(1, int(round(1 / a.step)))
        profile = []
        for start in range(0, buckets, per_second):
            xs = sorted(x for b in range(start, min(buckets, start + per_second)) for x in by_bucket.get(b, []))
            profile.append(f"{pct(xs, 50):.2f}/{xs[-1]:.2f}" if xs else "-")
        print(f"    p50/max by second of due time: {'  '.join(profile)}")
        return out
    finally:
        stop.set()
        for h in servers:
            h.stop()
        if db:
            db.drop()
        rmtree(tmp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--schedule-n", type=int, default=100_000)
    ap.add_argument("--warmup", type=int, default=5_000)
    ap.add_argument("-c", type=int, default=16)
    ap.add_argument("-m", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("-n", type=int, default=60_000, help="messages in the dispatch comparison")
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--rate", type=int, default=5_000)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--step", type=float, default=0.1)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--only", choices=["schedule", "dispatch", "lateness"], default=None)
    a = ap.parse_args()
    if not URL:
        raise SystemExit("set HERALD_TEST_POSTGRES_URL (eval \"$(scripts/pg-test-cluster.sh start)\")")
    print(f"binary {os.environ.get('HERALD_BIN')}; loadavg {loadavg()}")
    verdicts = []
    if a.only in (None, "schedule"):
        print(f"== durable Schedule, -n {a.schedule_n} -c {a.c} -m {a.m}, {a.rounds} rounds alternating")
        res = {"sqlite": [], "postgres": []}
        for _ in range(a.rounds):
            for store in ("sqlite", "postgres"):
                res[store].append(schedule_round(a, store))
        s, p = (median([r["req_s"] for r in res[k]]) for k in ("sqlite", "postgres"))
        sp99, pp99 = (median([r["p99"] for r in res[k]]) for k in ("sqlite", "postgres"))
        ratio = p / s
        verdicts.append(f"Schedule durable: postgres {p:,.0f} vs sqlite {s:,.0f} req/s = {ratio:.2f}× "
                        f"(p99 {pp99:.1f} vs {sp99:.1f} ms) — budget ≥ 0.6×: {'met' if ratio >= 0.6 else 'MISSED'}")
    if a.only in (None, "dispatch"):
        print(f"== dispatch, {a.n} messages due at once for {a.users} users")
        one = dispatch_run(a, 0)
        two = dispatch_run(a, 2)
        ratio = two["rate"] / one["rate"]
        met = ratio >= 0.8 and two["dups"] == 0 and two["delivered"] == two["ok"]
        verdicts.append(f"Dispatch: 2 postgres replicas {two['rate']:,.0f} vs 1 sqlite replica {one['rate']:,.0f} msg/s "
                        f"= {ratio:.2f}×, {two['dups']} duplicates, {two['delivered']}/{two['ok']} delivered — "
                        f"budget ≥ 0.8×, 0 duplicates: {'met' if met else 'MISSED'}")
    if a.only in (None, "lateness"):
        print(f"== lateness, one sqlite replica (reference), then two postgres replicas")
        one = lateness_run(a, 0)
        late = lateness_run(a, 2)
        met = late["p99"] <= 1.0 and late["delivered"] == late["ok"]
        verdicts.append(f"Lateness at {a.rate}/s, 2 postgres replicas: p99 {late['p99']:.3f} s (1 sqlite replica: "
                        f"p99 {one['p99']:.3f} s), "
                        f"{late['delivered']}/{late['ok']} delivered — budget p99 ≤ 1 s: {'met' if met else 'MISSED'}")
    print("== verdicts")
    for v in verdicts:
        print(v)


if __name__ == "__main__":
    main()
