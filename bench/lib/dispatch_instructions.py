"""Server instructions per dispatched message (bench/dispatch-instructions.sh).

`herald serve` (SQLite, the bundled APNs simulator, grace 0) runs under
callgrind; USERS users with one device each; N and then 2N messages due at a
later T0 each; callgrind dumps (and zeroes) its counters just before each T0
and once every message is SENT. (dump after 2N − dump after N) / N is one
dispatched message, all server threads, the in-process simulator included
(`SimulatorConnection` in the inclusive list is its share), with fixed costs
cancelled. callgrind runs the server ~50x slower: keep N small (2,000 takes
~10 minutes). SERVER_ARGS= adds `herald serve` arguments (split on blanks),
e.g. "--route-in-flight 8 --route-queue 0" to count the path of messages
parked by a full route (released and claimed again)."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import time

from herald_bench import Herald, bench_tmp, register_users, rmtree, schedule_bulk, wait_for


def dump(h: Herald, out: str, label: str) -> str:
    before = set(glob.glob(f"{out}/callgrind.out*"))
    subprocess.run(["callgrind_control", "-d", label, str(h.proc.pid)], check=True, stdout=subprocess.DEVNULL, timeout=300)
    for _ in range(3000):  # 300 s
        new = set(glob.glob(f"{out}/callgrind.out*")) - before
        if new:
            time.sleep(1)  # written in full
            return new.pop()
        time.sleep(0.1)
    raise SystemExit("callgrind wrote no dump")


def main():
    n, users_n, out, top = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    tmp = bench_tmp("herald-dispatch-ir-")
    h = Herald(os.path.join(tmp, "data"), "--grace-seconds", "0", "--log-level", "warning",
               *os.environ.get("SERVER_ARGS", "").split())
    try:
        users = [f"dispatch-user-{i:04d}" for i in range(users_n)]
        register_users(h, users)
        dumps, sent = [], 0
        for count in (n, 2 * n):
            per = count // users_n
            # Scheduling under callgrind: ~200/s on a quiet machine; RATE=
            # lowers what is assumed on a busy one (a longer lead to T0).
            t0 = time.time() + 8 + count / float(os.environ.get("RATE", "120"))
            for u in users:
                schedule_bulk(h, tmp, u, per, after=t0, c=4, m=8)
            if time.time() >= t0 - 1:
                raise SystemExit("scheduling ran past T0: use a smaller N or a lower RATE= (messages a second)")
            dump(h, out, f"scheduled{count}")
            target = sent + per * users_n
            wait_for(lambda: time.time() >= t0, 3600, 0.2)
            wait_for(lambda: h.counts().get("SENT", 0) >= target, 3600, 1.0)
            sent = target
            dumps.append(dump(h, out, f"dispatched{count}"))
            print(f"{count} dispatched ({sent} in all)", flush=True)
    finally:
        h.proc.terminate()
        h.proc.wait(timeout=600)
        rmtree(tmp)
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "callgrind_diff.py"),
                    dumps[0], dumps[1], str(n // users_n * users_n), "--top", top], check=False)


if __name__ == "__main__":
    main()
