"""kill -9 during delivery, 4 times, against a simulator in its own process
(crash_cycles.py): SPEC §4's crash rule against what APNs really received."""
from __future__ import annotations

from conftest import herald_binary
from crash_cycles import CrashRun


def test_kill_9_during_delivery_loses_nothing_and_resends_nothing(stubs, tmp_path):
    run = CrashRun(herald_binary(), stubs, str(tmp_path), users=30, per_user=50, devices=2, delay_ms=20)
    try:
        figures = run.run(kills=4)
    finally:
        run.stop()
    print(figures)
    assert figures["kills"] >= 3, figures
    assert figures["duplicates"] == 0, figures
    assert figures["lost"] == 0, figures
    assert figures["delivered_but_failed"] == 0, figures
    assert figures["failed"] == 0, figures
    # Every device never handed to APNs before a crash was handed over after
    # the restart: delivered, or UNCONFIRMED when a later kill caught it.
    assert (figures["never_handed_over_then_delivered"] + figures["never_handed_over_then_unconfirmed"]
            == figures["never_handed_over"]), figures
    # Every message reached at least one device (or is UNCONFIRMED there): SENT.
    assert figures["sent"] == figures["messages"], figures


def test_kill_9_during_android_delivery_loses_nothing_and_resends_nothing(stubs, tmp_path):
    """The same through FCM: `herald fcm-sim` in its own process (every
    answer delayed), an explicit --fcm-route, kill -9 mid-run."""
    run = CrashRun(herald_binary(), stubs, str(tmp_path), users=30, per_user=50, devices=2, delay_ms=20, platform="android")
    try:
        figures = run.run(kills=4)
    finally:
        run.stop()
    print(figures)
    assert figures["kills"] >= 3, figures
    assert figures["duplicates"] == 0, figures
    assert figures["lost"] == 0, figures
    assert figures["delivered_but_failed"] == 0, figures
    assert figures["failed"] == 0, figures
    assert (figures["never_handed_over_then_delivered"] + figures["never_handed_over_then_unconfirmed"]
            == figures["never_handed_over"]), figures
    assert figures["sent"] == figures["messages"], figures
