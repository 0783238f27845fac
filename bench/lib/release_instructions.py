"""Server instructions per released message vs per plainly dispatched one
(bench/dispatch-instructions.sh with MODE=release).

`herald serve` (SQLite, the bundled APNs simulator, grace 0) runs under
callgrind with a delivery policy on bundle A only: quiet hours from this
minute to a minute boundary E a few minutes ahead, in the devices' zone.
USERS users with one device each in A and in B (no policy).
1. N messages of A, due now: the dispatcher claims each and holds it
   WAITING until E (CampaignReport counts N deferred).
2. N messages of B, due at T1 (before E): callgrind dumps (and zeroes) its
   counters just before T1 and once all N are SENT: the plain window.
3. A dump just before E and once all of A are SENT: the release window.
Each window / N is one message with the window's fixed costs (timers while
it lasts) included; release − plain per message, by function, is what a
release costs beyond a plain dispatch (bench/lib/callgrind_diff.py with the
plain dump as SHORT and the release dump as LONG). Keep N small: callgrind
runs the server ~50x slower."""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time

from dispatch_instructions import dump
from herald_bench import BUNDLE, Herald, bench_tmp, register_users, rmtree, schedule_bulk, wait_for
from policy_release import CAMPAIGN, OTHER, minute_floor, read_side


def deferred(h: Herald) -> int:
    rs = read_side()
    report = h.push().CampaignReport(rs.CampaignReportRequest(bundle_id=BUNDLE, campaign_id=CAMPAIGN), timeout=300)
    return sum(c.deferred for c in report.cohorts)


def main():
    n, users_n, out, top = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    lead = float(os.environ.get("LEAD", 60 + n / 200 * 2 + n / 50 + n / 20))
    per = n // users_n
    n = per * users_n
    start = minute_floor(time.time())  # in the devices' zone
    end = start + dt.timedelta(minutes=int(lead // 60) + 1)
    e = end.timestamp()
    spec = f"bundles={BUNDLE} quiet-hours={start:%H:%M}-{end:%H:%M}"
    print(f"policy `{spec}`: quiet end E in {e - time.time():.0f} s", flush=True)
    tmp = bench_tmp("herald-release-ir-")
    h = Herald(os.path.join(tmp, "data"), "--grace-seconds", "0", "--log-level", "warning", "--delivery-policy", spec)
    try:
        a_users = [f"release-user-{i:04d}" for i in range(users_n)]
        b_users = [f"plain-user-{i:04d}" for i in range(users_n)]
        register_users(h, a_users)
        register_users(h, b_users, bundle=OTHER, first=users_n)
        for u in a_users:
            schedule_bulk(h, tmp, u, per, after=None, c=4, m=8)
        wait_for(lambda: deferred(h) >= n, max(1.0, e - time.time() - 60), 2.0)
        held = deferred(h)
        if held < n:
            raise SystemExit(f"only {held}/{n} held before E - 60 s: raise LEAD")
        print(f"{n} held; E in {e - time.time():.0f} s", flush=True)
        t1 = time.time() + 8 + n / 120
        for u in b_users:
            schedule_bulk(h, tmp, u, per, after=t1, bundle=OTHER, c=4, m=8)
        if time.time() >= t1 - 1:
            raise SystemExit("scheduling ran past T1: use a smaller N")
        dump(h, out, "plain-start")
        wait_for(lambda: time.time() >= t1, 3600, 0.2)
        wait_for(lambda: h.counts().get("SENT", 0) >= n, max(1.0, e - time.time() - 3), 1.0)
        if h.counts().get("SENT", 0) < n or time.time() >= e - 2:
            raise SystemExit("the plain dispatch did not end before E: raise LEAD")
        plain = dump(h, out, "plain")
        print(f"{n} dispatched plainly; E in {e - time.time():.0f} s", flush=True)
        wait_for(lambda: time.time() >= e - 1, 3600, 0.2)
        dump(h, out, "release-start")
        wait_for(lambda: h.counts().get("SENT", 0) >= 2 * n, 3600, 1.0)
        release = dump(h, out, "release")
        print(f"{n} released", flush=True)
    finally:
        h.proc.terminate()
        h.proc.wait(timeout=600)
        rmtree(tmp)
    diff = os.path.join(os.path.dirname(__file__), "callgrind_diff.py")
    print("== plain dispatch, per message (window / N)", flush=True)
    subprocess.run([sys.executable, diff, "/dev/null", plain, str(n), "--top", top], check=False)
    print("== release, per message (window / N)", flush=True)
    subprocess.run([sys.executable, diff, "/dev/null", release, str(n), "--top", top], check=False)
    print("== release − plain, per message", flush=True)
    subprocess.run([sys.executable, diff, plain, release, str(n), "--top", top], check=False)


if __name__ == "__main__":
    main()
