"""Issue 26's release budget: "Release of 1,000,000 held messages of one
bundle: drains at >= 0.9x the plain dispatch rate, while another bundle's due
pushes keep p99 lateness <= 1 s, and a transactional push of the same bundle
goes out within 1 s." One run, one binary, SQLite (the default store), two
phases on fresh servers, each with the bundled APNs simulator recording to a
file (--sim-record) that a thread tails (herald_bench.tail_lines: each line's
arrival stamped, its device token naming who it was for):

1. Reference (plain dispatch): N traditional messages of bundle A (--users
   users, one device each, grace 0) all due at one instant T0, no policy.
   Rate = N / (last push - T0); also first push -> last push.
2. Release: the same N, scheduled due now while a policy on A
   (`quiet-hours=<this minute>-<a minute boundary after the setup>` in the
   devices' zone, Europe/Zurich) holds them: the dispatcher claims each and
   holds it WAITING until the quiet end E (checked before E: Status's
   oldest_due_lag_ms is 0, a probe message is WAITING with not_before = E;
   after: CampaignReport counts N deferred). At E all N become due at once.
   Drain rate = N / (last A push - E), the same definition as the
   reference's, and the ratio. Meanwhile bundle B (no policy) has
   --b-rate pushes due per second (buckets of --b-step s, scheduled before
   with deliver_after, from E + --b-from s to past the expected drain
   end): lateness = arrival - due, p50/p99/max over B's pushes due during
   the drain [E, last A push]. And --tx transactional pushes of A are
   Scheduled (due now) at even intervals of the expected drain: Schedule
   call -> arrival (so it includes the Schedule RPC).

--b-from -2 (B's pushes due from 2 s before E) shows the DueIndex lane
stall of 2026-11-27 (bench/RESULTS.md, "Release of held messages"): A's
messages are not all held before E and none is sent after it.

Server CPU per push (user + sys over [T0/E, last A push] / every push sent
meanwhile) and peak RSS (VmHWM) of both phases; --perf PREFIX records a flat
perf profile of each drain. Every loop is bounded in count and time;
loopback only.

Usage: bench/policy-release.sh [-n 1000000] [--users 1000] [--b-rate 200] [--tx 5]"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib
import math
import os
import threading
import time
from zoneinfo import ZoneInfo

from herald_bench import (BUNDLE, Herald, Perf, bench_tmp, loadavg, pct, register_users, rfc3339, rmtree, schedule_bulk,
                          schedule_request, stubs, tail_lines, thread_cpu, thread_cpu_delta, wait_for)

OTHER = "com.example.other"  # bundle B: no policy
ZONE = ZoneInfo("Europe/Zurich")  # register_users' device zone: quiet hours are local to the device
TOKEN_AT = b'"device_token":"'
CAMPAIGN = "daily-digest"  # schedule_request's campaign: A's bulk (the transactional ones use another)


class Deliveries:
    """What the simulator accepted, by the index in each device token
    (herald_bench.token_for): A's bulk users [0, users), A's transactional
    users [users, users + tx), B's buckets after. Fed by the tail thread."""

    def __init__(self, users: int, tx: int):
        self.users, self.tx = users, tx
        self.a = 0
        self.a_first: float | None = None
        self.a_last: float | None = None
        self.tx_at: dict[int, float] = {}
        self.b: list[tuple[int, float]] = []  # (bucket, arrival)
        self.unknown = 0

    def on_lines(self, now: float, lines: list[bytes]):
        for line in lines:
            i = line.find(TOKEN_AT)
            if i < 0:
                self.unknown += 1
                continue
            index = int(line[i + len(TOKEN_AT):i + len(TOKEN_AT) + 8], 16)
            if index < self.users:
                self.a += 1
                if self.a_first is None:
                    self.a_first = now
                self.a_last = now
            elif index < self.users + self.tx:
                self.tx_at.setdefault(index - self.users, now)
            else:
                self.b.append((index - self.users - self.tx, now))


def minute_floor(t: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(t, ZONE).replace(second=0, microsecond=0)


def minute_ceil(t: float) -> dt.datetime:
    m = minute_floor(t)
    return m if m.timestamp() >= t else m + dt.timedelta(minutes=1)


def read_side():
    stubs()
    return importlib.import_module("herald.v1.read_side_pb2")


def server_usage(h: Herald) -> tuple[float, str]:
    user, system = h.cpu_seconds()
    return user + system, h.proc_status().get("VmRSS", "?")


def phase(a, release: bool, sched_rate: float, ref_rate: float) -> dict:
    """One fresh server; the reference (release=False) or the release.
    sched_rate, ref_rate: the reference's schedule and dispatch rates (for
    the release's timings; guesses for the reference)."""
    tmp = bench_tmp("herald-bench-release-")
    rec = os.path.join(tmp, "sim.jsonl")
    per = a.n // a.users
    n = per * a.users
    tx = a.tx if release else 0
    est_drain = n / ref_rate
    step = a.b_step
    b_per = max(1, round(a.b_rate * step))
    b_buckets = int(math.ceil((est_drain * 1.3 + 10 - a.b_from) / step)) if release else 0
    t_start = time.time()
    spec = ""
    if release:
        # Registration + B's buckets + A's scheduling (each held as it comes in) + margin.
        setup = a.quiet_lead or ((a.users + b_buckets) / 500 + b_buckets * 0.06 + n / sched_rate * a.hold_factor + 20)
        quiet_start, quiet_end = minute_floor(t_start), minute_ceil(t_start + setup)
        spec = f"bundles={BUNDLE} quiet-hours={quiet_start:%H:%M}-{quiet_end:%H:%M}"
        t0 = quiet_end.timestamp()
        print(f"release: policy `{spec}` (Europe/Zurich, the devices' zone): quiet end E in {t0 - time.time():.0f} s "
              f"(setup estimate {setup:.0f} s)", flush=True)
    args = ["--grace-seconds", "0", "--log-level", "warning", "--sim-record", rec]
    if spec:
        args += ["--delivery-policy", spec]
    h = Herald(os.path.join(tmp, "data"), *args)
    d = Deliveries(a.users, tx)
    stop = threading.Event()
    tail = threading.Thread(target=tail_lines, args=(rec, stop, d.on_lines), daemon=True)
    tail.start()
    out = {"n": n}
    try:
        users = [f"release-user-{i:05d}" for i in range(a.users)]
        register_users(h, users)
        register_users(h, [f"release-tx-{i:02d}" for i in range(tx)], first=a.users)
        b_users = [f"other-bucket-{b:05d}" for b in range(b_buckets)]
        register_users(h, b_users, bundle=OTHER, first=a.users + tx)
        if not release:
            t0 = time.time() + (a.lead or n / sched_rate * 1.5 + 15)
        b_due = [t0 + a.b_from + b * step for b in range(b_buckets)]
        b_ok = 0
        for b, u in enumerate(b_users):
            b_ok += schedule_bulk(h, tmp, u, b_per, after=b_due[b], bundle=OTHER)["succeeded"]
        # A: the reference's due at T0; the release's due now (held by the quiet hours).
        after = None if release else t0
        probe = h.push().Schedule(schedule_request(user=users[0], after=after), timeout=30).message_id
        t_sched = time.monotonic()
        ok = 1
        for i, u in enumerate(users):
            ok += schedule_bulk(h, tmp, u, per - (i == 0), after=after)["succeeded"] if per - (i == 0) > 0 else 0
        sched_s = time.monotonic() - t_sched
        out["sched_rate"] = ok / sched_s
        print(f"scheduled {ok}/{n} messages of {BUNDLE} for {a.users} users in {sched_s:.1f} s "
              f"({ok / sched_s:,.0f}/s); {b_ok} of {OTHER} ({b_buckets} buckets x {b_per}, {a.b_rate}/s due from "
              f"E{a.b_from:+g} s for {b_buckets * step:.0f} s); {time.time() - t_start:.0f} s since start; T0/E in "
              f"{t0 - time.time():.1f} s", flush=True)
        valid = time.time() < t0
        if release:
            # Every A message held before E: no due message left unclaimed (twice, a snapshot apart).
            def all_held():
                if h.status().oldest_due_lag_ms != 0:
                    return False
                time.sleep(1.1)  # the next Status snapshot (refreshed about every second)
                return h.status().oldest_due_lag_ms == 0
            t_held = time.time()
            held = wait_for(all_held, max(0.0, t0 - time.time() - 3), 0.5)
            msg = h.push().GetMessage(read_side().GetMessageRequest(bundle_id=BUNDLE, message_id=probe), timeout=30)
            dev = msg.devices[0] if msg.devices else None
            outcome = read_side().DeviceOutcome.Name(dev.outcome) if dev else "none"
            print(f"holds: {'all held' if held else 'NOT all held'} {time.time() - t_held:.1f} s after scheduling, "
                  f"{t0 - time.time():.1f} s before E; probe {outcome} not_before {dev.not_before if dev else '-'} "
                  f"(E = {rfc3339(t0)})", flush=True)
            valid = valid and bool(held) and outcome == "DEVICE_OUTCOME_WAITING"
        if not valid:
            print("WARNING: scheduling ran past T0/E, or due A messages were left unheld before E (Status "
                  "oldest_due_lag_ms > 0: too little time — raise --lead / --quiet-lead / --hold-factor — or the "
                  "server stopped taking A's lane): this phase's figures are invalid", flush=True)
        out["valid"] = valid

        wait_for(lambda: time.time() >= t0 - 0.5, max(1.0, t0 - time.time() + 1), 0.05)
        la0 = loadavg()
        cpu0, rss0 = server_usage(h)
        tc0 = thread_cpu(h.proc.pid)
        tx_calls: dict[int, float] = {}
        tx_during: dict[int, bool] = {}

        def send_transactional():
            # At even intervals across the expected drain; each Schedule due now.
            for k in range(tx):
                at = t0 + est_drain * (k + 1) / (tx + 1)
                wait_for(lambda: time.time() >= at, max(0.0, at - time.time() + 1), 0.01)
                req = schedule_request(user=f"release-tx-{k:02d}")
                req.transactional = True
                req.campaign_id = "receipts"
                tx_during[k] = d.a < n
                tx_calls[k] = time.time()
                h.push().Schedule(req, timeout=30)

        txt = threading.Thread(target=send_transactional, daemon=True)
        txt.start()
        deadline = time.monotonic() + max(0.0, t0 - time.time()) + a.timeout
        cpu1 = None
        perf = Perf(h.proc.pid, f"{a.perf}-{'release' if release else 'reference'}.data" if a.perf else None,
                    freq=a.perf_freq, call_graph=a.perf_call_graph or None).__enter__()
        while time.monotonic() < deadline:
            if cpu1 is None and d.a >= n:
                cpu1, rss1 = server_usage(h)
                tc1 = thread_cpu(h.proc.pid)
                pushes = d.a + len(d.b) + len(d.tx_at)
            if d.a >= n and len(d.b) >= b_ok and len(d.tx_at) >= tx:
                break
            time.sleep(0.05)
        perf.__exit__(None, None, None)
        txt.join(5)
        if cpu1 is None:
            cpu1, rss1 = server_usage(h)
            tc1 = thread_cpu(h.proc.pid)
            pushes = d.a + len(d.b) + len(d.tx_at)
        la1 = loadavg()
        stop.set()
        tail.join(5)
        st = h.proc_status()
        name = "release" if release else "reference"
        if d.a < n:
            print(f"WARNING: {name}: only {d.a}/{n} A pushes arrived within --timeout {a.timeout:.0f} s")
        a_last = d.a_last or time.time()
        out["rate"] = d.a / max(1e-9, a_last - t0)
        out["rate_first"] = d.a / max(1e-9, a_last - (d.a_first or t0))
        # Per push of every bundle sent meanwhile (the release's B and transactional ones too).
        out["cpu_us"] = (cpu1 - cpu0) / max(1, pushes) * 1e6
        out["hwm"] = st.get("VmHWM")
        print(f"{name}: {d.a}/{n} A pushes; {'E' if release else 'T0'} -> first {((d.a_first or t0) - t0):.2f} s, "
              f"-> last {a_last - t0:.2f} s: {out['rate']:,.0f} msg/s (first -> last {out['rate_first']:,.0f} msg/s); "
              f"server CPU {cpu1 - cpu0:.1f} s / {pushes} pushes = {out['cpu_us']:.0f} us/push; VmRSS {rss0} at T0, {rss1} after; "
              f"VmHWM {out['hwm']}; loadavg {la0} -> {la1}", flush=True)
        print(f"{name}: server threads: {thread_cpu_delta(tc0, tc1)}", flush=True)
        if release:
            # B: lateness of the pushes due during the drain [E, last A push], and of all.
            during = sorted(at - b_due[b] for b, at in d.b if t0 <= b_due[b] <= a_last)
            every = sorted(at - b_due[b] for b, at in d.b)
            out["b_p99"] = pct(during, 99)
            out["b_n"] = len(during)
            for label, xs in (("due during the drain", during), ("all", every)):
                if xs:
                    print(f"{OTHER} lateness, {label} ({len(xs)} pushes): p50 {pct(xs, 50):.3f} s p99 {pct(xs, 99):.3f} s "
                          f"max {xs[-1]:.3f} s", flush=True)
            print(f"{OTHER}: {len(d.b)}/{b_ok} pushes arrived", flush=True)
            lat = {k: d.tx_at[k] - tx_calls[k] for k in tx_calls if k in d.tx_at}
            out["tx_max"] = max(lat.values()) if len(lat) == tx and tx else float("nan")
            out["tx_during"] = sum(tx_during.values())
            print("transactional A pushes, Schedule call -> arrival: " + ", ".join(
                f"{lat[k]:.3f} s at E+{tx_calls[k] - t0:.0f} s{'' if tx_during[k] else ' (after the drain)'}"
                if k in lat else f"#{k} MISSING" for k in sorted(tx_calls)), flush=True)
            report = h.push().CampaignReport(read_side().CampaignReportRequest(bundle_id=BUNDLE, campaign_id=CAMPAIGN),
                                             timeout=120)
            deferred = sum(c.deferred for c in report.cohorts)
            sent = sum(c.sent for c in report.cohorts)
            out["deferred"] = deferred
            print(f"CampaignReport {BUNDLE}/{CAMPAIGN}: deferred {deferred}/{n}, sent {sent}/{n}", flush=True)
            out["valid"] = valid and deferred == n
        return out
    finally:
        stop.set()
        code = h.stop()
        print(f"server exit {code}", flush=True)
        if not a.keep:
            rmtree(tmp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=1_000_000, help="held messages of bundle A (and the reference's)")
    ap.add_argument("--users", type=int, default=1000, help="A's users, one device each")
    ap.add_argument("--b-rate", type=int, default=200, help="bundle B's pushes due per second during the drain")
    ap.add_argument("--b-step", type=float, default=0.5, help="seconds between B's due times (buckets)")
    ap.add_argument("--b-from", type=float, default=0.0,
                    help="seconds from the quiet end E to B's first due time (negative: B has pushes due before E)")
    ap.add_argument("--tx", type=int, default=5, help="transactional A pushes Scheduled during the drain")
    ap.add_argument("--lead", type=float, default=0, help="reference: seconds from start to T0 (default from -n)")
    ap.add_argument("--quiet-lead", type=float, default=0, help="release: seconds from start to E at least (default from the reference)")
    ap.add_argument("--hold-factor", type=float, default=1.6, help="release: scheduling while holding vs the reference's")
    ap.add_argument("--sched-rate", type=float, default=4000, help="reference: the schedule rate guessed for T0")
    ap.add_argument("--timeout", type=float, default=900, help="seconds after T0/E to wait for the pushes")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--perf", default="", help="perf record (flat) the server from T0/E to the drain's end into PREFIX-{reference,release}.data")
    ap.add_argument("--perf-call-graph", default="", help="with --perf: perf's --call-graph (e.g. dwarf,8192; default flat)")
    ap.add_argument("--perf-freq", type=int, default=499, help="with --perf: samples per second")
    a = ap.parse_args()
    if a.users < 1 or a.n < a.users or a.tx < 0 or a.tx > 99 or a.b_rate < 1 or a.b_step <= 0:
        ap.error("need -n >= --users >= 1, 0 <= --tx <= 99, --b-rate >= 1, --b-step > 0")
    print(f"== reference: plain dispatch of {a.n:,} (loadavg {loadavg()})", flush=True)
    ref = phase(a, release=False, sched_rate=a.sched_rate, ref_rate=a.sched_rate * 2)
    print(f"== release of {a.n:,} held (loadavg {loadavg()})", flush=True)
    rel = phase(a, release=True, sched_rate=ref["sched_rate"], ref_rate=ref["rate"])
    ratio = rel["rate"] / ref["rate"]
    ok_rate, ok_b, ok_tx = ratio >= 0.9, rel["b_p99"] <= 1.0, rel["tx_max"] <= 1.0

    def verdict(ok):
        return "met" if ok else "MISSED"

    print(f"policy release of {ref['n']:,} held messages ({a.users} users): drain {rel['rate']:,.0f} msg/s vs plain "
          f"dispatch {ref['rate']:,.0f} msg/s = {ratio:.2f}x (budget >= 0.90x: {verdict(ok_rate)}; first -> last push "
          f"{rel['rate_first'] / ref['rate_first']:.2f}x); {OTHER} p99 lateness during the drain {rel['b_p99']:.3f} s over "
          f"{rel['b_n']} pushes (budget <= 1 s: {verdict(ok_b)}); transactional max {rel['tx_max']:.3f} s, "
          f"{rel['tx_during']}/{a.tx} sent during the drain (budget <= 1 s: {verdict(ok_tx)}); server CPU per push "
          f"{rel['cpu_us']:.0f} vs {ref['cpu_us']:.0f} us ({rel['cpu_us'] / ref['cpu_us']:.2f}x); VmHWM {rel['hwm']} vs {ref['hwm']}; "
          f"{'valid' if ref['valid'] and rel['valid'] else 'INVALID (see the warnings above)'}", flush=True)


if __name__ == "__main__":
    main()
