"""1,000,000 pending: fill a data dir with N future messages through the real
Schedule path (h2load, bounded -n per chunk), SIGTERM, then restart R times and
measure exec → `listening on` and peak RSS (VmHWM) after start."""
from __future__ import annotations

import argparse
import os
import re
import time

from herald_bench import (Herald, bench_tmp, framed, h2load, loadavg, rmtree, schedule_request, wait_for)


def du(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)) / 2**20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=1_000_000)
    ap.add_argument("--chunk", type=int, default=250_000)
    ap.add_argument("--restarts", type=int, default=3)
    ap.add_argument("--data-dir", default="", help="reuse a filled data dir (skips filling; kept)")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    tmp = bench_tmp("herald-bench-pending-")
    data = a.data_dir or os.path.join(tmp, "data")
    try:
        if not a.data_dir:
            body = os.path.join(tmp, "schedule.bin")
            req = schedule_request(user="user-000042", key="", after=time.time() + 86_400)
            with open(body, "wb") as f:
                f.write(framed(req))
            h = Herald(data, "--log-level", "warning")
            t = time.monotonic()
            h.push().Schedule(req, timeout=10)
            done = 1
            la0 = loadavg()
            while done < a.n:
                k = min(a.chunk, a.n - done)
                r = h2load(h.address, body, k, 16, 32, timeout=900)
                done += r.get("succeeded", 0)
                if r.get("succeeded", 0) != k:
                    print(f"chunk: {r.get('succeeded')} of {k} succeeded; {r['raw'][-400:]}")
                print(f"  filled {done:,} ({r.get('req_s', 0):,.0f} req/s, loadavg {loadavg()})", flush=True)
            fill_s = time.monotonic() - t
            total = wait_for(lambda: (v := h.total()) >= done and v, 30, 0.25) or h.total()
            print(f"fill: {done:,} Schedule OK in {fill_s:.1f} s ({done / fill_s:,.0f}/s); Status total {total:,}; "
                  f"filler VmHWM {h.proc_status().get('VmHWM')}; loadavg {la0} → {loadavg()}")
            t = time.monotonic()
            code = h.stop(timeout=120)
            print(f"SIGTERM → exit {code} in {time.monotonic() - t:.2f} s; data dir {du(data):,.0f} MiB")
        for i in range(a.restarts):
            la = loadavg()
            h = Herald(data, "--log-level", "info")
            up = h.startup_s
            time.sleep(2)
            st = h.proc_status()
            total = h.counts()
            pending = total.get("SCHEDULED", 0)
            rebuilt = next((l for l in h.stderr_lines if "due index rebuilt" in l), "")
            m = re.search(r"elapsed=(\S+)", rebuilt)
            print(f"restart {i + 1}: exec→listening {up:.2f} s; due-index rebuild {m.group(1) if m else '?'}; "
                  f"VmHWM {st.get('VmHWM')} VmRSS {st.get('VmRSS')} 2 s after start; SCHEDULED {pending:,}; "
                  f"loadavg before {la} after {loadavg()}", flush=True)
            t = time.monotonic()
            code = h.stop(timeout=120)
            print(f"  SIGTERM → exit {code} in {time.monotonic() - t:.2f} s")
    finally:
        if not a.keep and not a.data_dir:
            rmtree(tmp)
        elif a.keep:
            print(f"kept {data}")


if __name__ == "__main__":
    main()
