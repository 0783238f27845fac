"""Dispatch rate: K users with one device each, N messages all due at the same
instant T0 (grace 0, traditional), then the rate at which they reach the
bundled APNs simulator, from Status SENT counts over time (default) or from
the simulator's record file (--record: a file write per delivery).

--vs-apns (issue 14): in the same run, after the dispatch phase, the APNs
client alone to `herald apns-sim` (as bench/apns.sh does: the same binary,
JWT verified, --quiet; --apns-connections × --apns-concurrency in flight,
the same N), and the ratio dispatch / APNs client against the 0.65 budget.
--rounds R repeats the pair R times (medians printed at the end). With
BASELINE_BIN=<herald binary> each round first runs the dispatch phase with
that binary too (before/after A/B in one run; the APNs client is the
HERALD_BIN one), and the medians compare both.

--mixed (issue 12): in one run, a server with iOS users only, then a fresh
server with half the users Android (their own bundle, the bundled FCM
simulator; --fcm-rate-per-minute raised so FCM's quota bucket does not set
the pace), the same N; prints mixed/iOS-only of the first-progress→all rate
against the 0.9 budget."""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import time

import herald_bench
from herald_bench import (BIN, thread_cpu, thread_cpu_delta, Herald, Perf, bench_tmp, loadavg, process_cpu, register_users, rmtree, schedule_bulk, wait_for)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--record", action="store_true", help="count simulator record lines instead of Status SENT")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--log-level", default="warning", help="server log level (info logs a line per delivery)")
    ap.add_argument("--perf", default="", help="perf record the server during dispatch into this file")
    ap.add_argument("--mixed", action="store_true", help="iOS-only, then half iOS / half Android; print the ratio")
    ap.add_argument("--server-arg", action="append", default=[], help="extra `herald serve` argument (repeatable)")
    ap.add_argument("--vs-apns", action="store_true", help="then the APNs client alone to apns-sim; print the ratio")
    ap.add_argument("--apns-connections", type=int, default=1)
    ap.add_argument("--apns-concurrency", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=1, help="with --vs-apns: dispatch/APNs pairs, medians at the end")
    ap.add_argument("--lead", type=float, default=0, help="seconds from the first Schedule to T0 (default n/4000 + 5)")
    a = ap.parse_args()
    if a.vs_apns:
        versus_apns(a)
        return
    if not a.mixed:
        measure(a, android=0)
        return
    if a.users < 2:
        ap.error("--mixed needs --users of at least 2")
    print(f"== iOS only: {a.users} iOS users (loadavg {loadavg()})")
    ios = measure(a, android=0)
    print(f"== mixed: {a.users - a.users // 2} iOS + {a.users // 2} Android users (loadavg {loadavg()})")
    mixed = measure(a, android=a.users // 2)
    ratio = mixed / ios if ios else float("nan")
    print(f"mixed/iOS-only dispatch rate (first progress→all): {mixed:,.0f} / {ios:,.0f} msg/s = {ratio:.3f} "
          f"(budget >= 0.90: {'met' if ratio >= 0.9 else 'MISSED'}); loadavg {loadavg()}")


ANDROID_BUNDLE = "com.example.droid"


def versus_apns(a):
    """Dispatch rate, then the APNs client's own rate to the simulator, in
    one run (`--rounds` pairs); prints each pair's ratio and the medians'.
    With BASELINE_BIN, the baseline binary's dispatch phase too, each round."""
    baseline = os.environ.get("BASELINE_BIN", "")
    binaries = [("baseline", baseline), ("candidate", BIN)] if baseline else [("", BIN)]
    rows = {name: [] for name, _ in binaries}  # name -> [(rate, cpu µs, client rate, client cpu µs)]
    for r in range(a.rounds):
        runs = []
        for name, binary in binaries:
            print(f"== round {r + 1}/{a.rounds}: dispatch {name} {binary} (loadavg {loadavg()})")
            herald_bench.BIN = binary
            runs.append((name, measure(a, android=0), LAST_CPU_US[0]))
        herald_bench.BIN = BIN
        c, c_cpu = apns_client_rate(a.n, a.apns_connections, a.apns_concurrency)
        for name, d, d_cpu in runs:
            rows[name].append((d, d_cpu, c, c_cpu))
            print(f"round {r + 1} {name}: dispatch {d:,.0f} msg/s, APNs client {c:,.0f} msg/s = {d / c:.3f}; CPU per "
                  f"message (robust to the machine's load): dispatch server {d_cpu:.0f} µs vs APNs client + apns-sim "
                  f"{c_cpu:.0f} µs = {c_cpu / d_cpu:.3f}")
    for name, pairs in rows.items():
        d = statistics.median(p[0] for p in pairs)
        c = statistics.median(p[2] for p in pairs)
        d_cpu = statistics.median(p[1] for p in pairs)
        c_cpu = statistics.median(p[3] for p in pairs)
        print(f"{name + ': ' if name else ''}dispatch / APNs client (medians of {len(pairs)}): {d:,.0f} / {c:,.0f} msg/s "
              f"= {d / c:.3f} (budget >= 0.65: {'met' if d / c >= 0.65 else 'MISSED'}); CPU per message {d_cpu:.0f} vs "
              f"{c_cpu:.0f} µs = {c_cpu / d_cpu:.3f}; loadavg {loadavg()}")


LAST_CPU_US = [float("nan")]  # measure(): the server's CPU per message sent, µs


def apns_client_rate(n: int, connections: int, concurrency: int) -> tuple[float, float]:
    """`herald apns-sim --bench-connect` (the APNs client alone) → (msg/s,
    client + simulator CPU µs per message)."""
    tmp = bench_tmp("herald-bench-apns-")
    try:
        key, pub, ca = (os.path.join(tmp, f) for f in ("key.p8", "pub.pem", "ca.pem"))
        ec = subprocess.run(["openssl", "ecparam", "-genkey", "-name", "prime256v1", "-noout"],
                            check=True, capture_output=True).stdout
        subprocess.run(["openssl", "pkcs8", "-topk8", "-nocrypt", "-out", key], input=ec, check=True)
        subprocess.run(["openssl", "ec", "-in", key, "-pubout", "-out", pub], check=True, capture_output=True)
        ids = ["--key-id", "BENCHKEY1", "--team-id", "BENCHTEAM1"]
        sim = subprocess.Popen([BIN, "apns-sim", "--port", "0", "--ca-out", ca, "--public-key", pub, *ids,
                                "--topics", "com.example.bench", "--quiet"], stdout=subprocess.PIPE, text=True)
        try:
            port = sim.stdout.readline().strip().rsplit(":", 1)[1]
            out = subprocess.run([BIN, "apns-sim", "--bench-connect", f"127.0.0.1:{port}", "--bench-ca", ca,
                                  "--bench-p8", key, *ids, "--bench-count", str(n),
                                  "--bench-connections", str(connections), "--bench-concurrency", str(concurrency)],
                                 check=True, capture_output=True, text=True, timeout=600).stdout.strip()
            sim_cpu = sum(process_cpu(sim.pid))
        finally:
            sim.terminate()
            sim.wait(timeout=60)
        client_cpu = sum(float(x) for x in re.findall(r"client_cpu_(?:user|sys)=([\d.]+)s", out))
        print(f"APNs client alone: {out} sim_cpu={sim_cpu:.2f}s")
        return float(re.search(r"rate=([\d.]+)/s", out).group(1)), (client_cpu + sim_cpu) / n * 1e6
    finally:
        rmtree(tmp)


def measure(a, android: int) -> float:
    """One server, `a.users` users of which the last `android` are Android;
    returns the first-progress→all dispatch rate."""
    tmp = bench_tmp("herald-bench-dispatch-")
    rec = os.path.join(tmp, "sim.jsonl")
    args = ["--grace-seconds", "0", "--log-level", a.log_level, *a.server_arg]
    if android:
        args += ["--fcm-rate-per-minute", "100000000"]
    if a.record:
        args += ["--sim-record", rec]
    h = Herald(os.path.join(tmp, "data"), *args)
    try:
        users = [f"dispatch-user-{i:04d}" for i in range(a.users)]
        ios_users, android_users = users[:len(users) - android], users[len(users) - android:]
        register_users(h, ios_users)
        if android_users:
            register_users(h, android_users, platform="PLATFORM_ANDROID", bundle=ANDROID_BUNDLE)
        per = a.n // a.users
        n = per * a.users
        # Estimate the scheduling time, then put T0 a margin after it.
        t0 = time.time() + (getattr(a, "lead", 0) or n / 4_000 + 5)
        t_sched = time.monotonic()
        ok = 0
        for u in ios_users:
            ok += schedule_bulk(h, tmp, u, per, after=t0)["succeeded"]
        for u in android_users:
            ok += schedule_bulk(h, tmp, u, per, after=t0, platform="PLATFORM_ANDROID", bundle=ANDROID_BUNDLE)["succeeded"]
        sched_s = time.monotonic() - t_sched
        if time.time() >= t0:
            print(f"WARNING: scheduling took {sched_s:.1f} s and ran past T0; rerun with a smaller -n")
        print(f"scheduled {ok}/{n} messages for {a.users} users in {sched_s:.1f} s; due at T0 in {t0 - time.time():.1f} s")
        wait_for(lambda: time.time() >= t0 - 0.5, 120, 0.05)
        la0 = loadavg()
        cpu0 = h.cpu_seconds()
        tc0 = thread_cpu(h.proc.pid)
        io0 = h.io()
        rss0 = h.proc_status().get('VmRSS')

        def sent_now():
            if a.record:
                if not os.path.exists(rec):
                    return 0
                with open(rec, "rb") as f:
                    return sum(1 for _ in f)
            return h.counts().get("SENT", 0)

        samples = []
        deadline = time.monotonic() + a.timeout
        perf = Perf(h.proc.pid, a.perf or None).__enter__()
        while time.monotonic() < deadline:
            v = sent_now()
            samples.append((time.time(), v))
            if v >= ok:
                break
            time.sleep(0.2)
        perf.__exit__(None, None, None)
        cpu1 = h.cpu_seconds()
        tc1 = thread_cpu(h.proc.pid)
        io1 = h.io()
        print(f"server I/O per message: write() {(io1['wchar'] - io0['wchar']) / ok / 1024:.1f} KiB "
              f"(includes TLS to the in-process simulator), to disk {(io1['write_bytes'] - io0['write_bytes']) / ok / 1024:.1f} KiB")
        print(f"server threads CPU: {thread_cpu_delta(tc0, tc1)}; VmRSS before {rss0}")
        la1 = loadavg()
        final = samples[-1][1]
        # First sample showing progress, last sample (all sent): Status
        # snapshots refresh once a second, so the window is ±1 s.
        first = next((i for i, (_, v) in enumerate(samples) if v > 0), None)
        t_first = samples[first - 1][0] if first else t0
        t_last = samples[-1][0]
        lo = next((t for t, v in samples if v >= 0.1 * ok), t0)
        hi = next((t for t, v in samples if v >= 0.9 * ok), t_last)
        st = h.proc_status()
        counts = h.counts()
        print(f"dispatch: {final}/{ok} SENT; T0→all sent {t_last - t0:.2f} s → {final / max(1e-9, t_last - t0):,.0f} msg/s; "
              f"first progress→all {t_last - t_first:.2f} s → {final / max(1e-9, t_last - t_first):,.0f} msg/s; "
              f"10%→90% {hi - lo:.2f} s → {0.8 * ok / max(1e-9, hi - lo):,.0f} msg/s")
        LAST_CPU_US[0] = (cpu1[0] - cpu0[0] + cpu1[1] - cpu0[1]) / max(1, final) * 1e6
        print(f"server CPU during dispatch: user {cpu1[0] - cpu0[0]:.2f} s sys {cpu1[1] - cpu0[1]:.2f} s "
              f"({LAST_CPU_US[0]:.0f} µs per message); "
              f"VmHWM {st.get('VmHWM')} VmRSS {st.get('VmRSS')}; counts {counts}; loadavg before {la0} after {la1}")
        trace = " ".join(f"{t - t0:+.1f}s:{v}" for t, v in samples[:: max(1, len(samples) // 25)])
        print(f"trace (time after T0: SENT): {trace}")
        return final / max(1e-9, t_last - t_first)
    finally:
        code = h.stop()
        print(f"server exit {code}")
        if not a.keep:
            rmtree(tmp)


if __name__ == "__main__":
    main()
