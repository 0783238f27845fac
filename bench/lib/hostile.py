"""Hostile-load budgets of issue "Bounded under hostile input" (bench/hostile.sh).

1. health-under-render: Health/Check latency (h2load -c1 -m1, sequential) alone,
   then while four clients (h2load -c4 -m1) send the largest Render request the
   limits allow, in a loop. Budget: Health p99 <= 50 ms under load.
2. partial-bodies: 60 connections, each trying to hold 16 MiB of unfinished
   request bodies (four calls declaring 4 MiB messages, all but the last byte
   sent). Budget: server peak RSS (VmHWM) <= 256 MiB, and Health still answers
   during the attack. Prints how many calls the buffer budgets refused.
3. no-token bodies: with --tokens-file, 20 connections sending 4 MiB bodies
   without a token: refused from the headers, RSS stays flat.
4. unauthenticated (issue 24 item 3; `bench/hostile.sh unauthenticated`): from
   127.0.0.2, 400 connections (per-peer cap 256), slow Health bodies against
   the 4 MiB unauthenticated budget and 17 Watch streams per connection (16
   allowed); from 127.0.0.1 meanwhile Health p99, a Schedule with a token and
   RSS. Budget: p99 <= 50 ms, RSS <= 256 MiB, the Schedule succeeds.

Every server is `herald serve` (release) on 127.0.0.1 port 0 in a temp data dir;
every loop is bounded in count and time; only our own PIDs are signalled.
"""
from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import herald_bench as hb  # noqa: E402

sys.path.insert(0, str(hb.ROOT / "Tests" / "interop"))
from test_wire import EMPTY_FRAME, HEALTH_CHECK, Client  # noqa: E402

MIB = 1 << 20
RENDER = "/herald.v1.PushService/Render"


def largest_render(keys: int) -> bytes:
    """A RenderRequest just under the 4 MiB message limit: `keys` user_info
    entries with long string values (each key and the count within the
    documented limits), so all of it is decoded and rendered before the
    4096-byte payload limit refuses it."""
    s = hb.stubs()
    from google.protobuf import struct_pb2

    user_info = struct_pb2.Struct()
    value_len = (4 * MIB - 64 * 1024) // keys
    user_info.update({f"k{i:04d}": "v" * value_len for i in range(keys)})
    request = s.p.RenderRequest(
        bundle_id=hb.BUNDLE, platform=s.t.PLATFORM_IOS, locale="en",
        content=s.t.Content(title=s.t.LocalizedText(text="Hi"), body=s.t.LocalizedText(text="There"),
                            user_info=user_info))
    body = request.SerializeToString()
    assert len(body) < 4 * MIB, len(body)
    return hb.framed(request)


def health_latency(address: str, tmp: str, n: int) -> dict:
    body = os.path.join(tmp, "health.bin")
    with open(body, "wb") as f:
        f.write(EMPTY_FRAME)
    log = os.path.join(tmp, f"health-{time.monotonic_ns()}.log")
    return hb.h2load(address, body, n, c=1, m=1, path=HEALTH_CHECK, log_file=log)


def health_under_render(args) -> None:
    tmp = hb.bench_tmp("herald-hostile-")
    h = hb.Herald(os.path.join(tmp, "data"))
    try:
        body = os.path.join(tmp, "render.bin")
        with open(body, "wb") as f:
            f.write(largest_render(args.keys))
        alone = health_latency(h.address, tmp, args.health_n)
        cpu0 = sum(h.cpu_seconds())
        load = subprocess.Popen(
            ["h2load", "-n", str(args.render_n), "-c", "4", "-m", "1", "-d", body,
             "-H", "content-type: application/grpc", "-H", "te: trailers", f"http://{h.address}{RENDER}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        # Health for as long as the Render load runs (bounded: 600 s).
        t0 = time.monotonic()
        loaded = {"lat_ms": []}
        while load.poll() is None and time.monotonic() - t0 < 600:
            loaded["lat_ms"].extend(health_latency(h.address, tmp, args.health_n)["lat_ms"])
        loaded["lat_ms"].sort()
        health_s = time.monotonic() - t0
        out, _ = load.communicate(timeout=600)
        cpu = sum(h.cpu_seconds()) - cpu0
        renders = hb.H2_REQS.search(out)
        finished = hb.H2_FINISHED.search(out)
        rss = h.proc_status()["VmHWM"]
        print(f"health-under-render: request {os.path.getsize(body) / MIB:.2f} MiB ({args.keys} user_info keys)")
        for name, r in (("alone", alone), ("under 4 Render clients", loaded)):
            lat = r["lat_ms"]
            print(f"  Health {name:>24}: n={len(lat)} p50={hb.pct(lat, 50):.2f} ms p99={hb.pct(lat, 99):.2f} ms "
                  f"max={lat[-1]:.2f} ms")
        print(f"  Health measured for the {health_s:.1f} s of the Render load")
        if renders and finished:
            print(f"  Render: {renders[3]} done in {finished[1]}{finished[2]} ({float(finished[3]):.1f} req/s), "
                  f"server CPU {cpu:.1f} s ({cpu / max(1, int(renders[3])) * 1000:.1f} ms/call), peak RSS {rss}")
        p99 = hb.pct(loaded["lat_ms"], 99)
        print(f"  budget Health p99 <= 50 ms under load: {'MET' if p99 <= 50 else 'MISSED'} ({p99:.2f} ms)")
    finally:
        h.stop()
        hb.rmtree(tmp)


def hold_partial_bodies(address: str, streams: int, refused: list[int], held: list[int], stalled: list[int],
                        stop: threading.Event):
    """One connection: `streams` calls declaring 4 MiB, all but the last byte
    sent (flow control respected), then kept open until `stop`."""
    client = Client(*address.split(":"))
    client.sock.settimeout(30)
    ids = []
    try:
        for _ in range(streams):
            sid = client.start(RENDER)  # admitted (no tokens file); Health takes 64 KiB at most
            client.send(sid, struct.pack(">BI", 0, 4 * MIB))
            ids.append(sid)
        remaining = {sid: 4 * MIB - 1 for sid in ids}
        deadline = time.monotonic() + 120
        while any(remaining.values()) and time.monotonic() < deadline:
            progressed = False
            for sid in ids:
                if not remaining[sid] or client.streams[sid].done:
                    remaining[sid] = 0
                    continue
                window = min(client.conn.local_flow_control_window(sid), client.conn.max_outbound_frame_size,
                             remaining[sid])
                if window > 0:
                    client.send(sid, b"\x00" * window)
                    remaining[sid] -= window
                    progressed = True
            if not progressed:
                try:
                    client.pump()
                except TimeoutError:
                    break  # no window from the server for 30 s: counted as not fully sent
        if any(remaining.values()):
            stalled.append(sum(1 for sid in ids if remaining[sid]))
        refused.append(sum(1 for sid in ids if client.streams[sid].grpc_status == 8))
        held.append(sum(1 for sid in ids if not client.streams[sid].done))
        stop.wait(120)
    finally:
        client.sock.close()


def partial_bodies(args) -> None:
    tmp = hb.bench_tmp("herald-hostile-")
    h = hb.Herald(os.path.join(tmp, "data"))
    try:
        before = h.proc_status()["VmRSS"]
        refused: list[int] = []
        held: list[int] = []
        stalled: list[int] = []
        stop = threading.Event()
        threads = [threading.Thread(target=hold_partial_bodies, args=(h.address, 4, refused, held, stalled, stop),
                                    daemon=True)
                   for _ in range(args.connections)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        deadline = time.monotonic() + 300
        while len(refused) < len(threads) and time.monotonic() < deadline:
            time.sleep(0.2)
        fill_s = time.monotonic() - t0
        during = health_latency(h.address, tmp, 200)["lat_ms"]
        status = h.proc_status()
        stop.set()
        for t in threads:
            t.join(30)
        print(f"partial-bodies: {args.connections} connections x 4 calls x (4 MiB - 1) unfinished "
              f"({args.connections * 16} MiB attempted) in {fill_s:.1f} s")
        print(f"  calls holding bytes: {sum(held)}, refused RESOURCE_EXHAUSTED: {sum(refused)}, "
              f"not fully sent: {sum(stalled)}")
        print(f"  server RSS before {before}, while held {status['VmRSS']}, peak {status['VmHWM']}")
        print(f"  Health during the attack: n={len(during)} p50={hb.pct(during, 50):.2f} ms "
              f"p99={hb.pct(during, 99):.2f} ms")
        peak_mib = int(status["VmHWM"].split()[0]) / 1024
        print(f"  budget peak RSS <= 256 MiB and still serving: "
              f"{'MET' if peak_mib <= 256 and len(during) == 200 else 'MISSED'} ({peak_mib:.0f} MiB)")
    finally:
        h.stop()
        hb.rmtree(tmp)


def no_token_bodies(args) -> None:
    tmp = hb.bench_tmp("herald-hostile-")
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write("bench bench-token-0123456789abcdef *\n")
    os.chmod(tokens, 0o600)
    h = hb.Herald(os.path.join(tmp, "data"), "--tokens-file", tokens)
    try:
        before = h.proc_status()["VmRSS"]
        codes = []
        for _ in range(20):
            client = Client(*h.address.split(":"))
            sid = client.start("/herald.v1.PushService/Schedule")
            client.send(sid, struct.pack(">BI", 0, 4 * MIB) + b"\x00" * 16000)
            codes.append(client.wait(sid).grpc_status)
            client.sock.close()
        status = h.proc_status()
        print(f"no-token bodies: 20 connections, Schedule with 4 MiB declared and no token: statuses {sorted(set(codes))}")
        print(f"  server RSS before {before}, after {status['VmRSS']}, peak {status['VmHWM']}")
    finally:
        h.stop()
        hb.rmtree(tmp)


def unauthenticated(args) -> None:
    """Issue 24 item 3's attack, all from 127.0.0.2 (another peer address on
    loopback): a connection flood past the per-peer cap, slow Health bodies
    against the unauthenticated buffer budget, and Watch streams past their
    bounds. Measured from 127.0.0.1 while it is held: Health p99 (h2load
    -c1 -m1), a Schedule with a token (grpcio), and the server's RSS."""
    import socket

    import h2.config
    import h2.connection
    import h2.exceptions

    tmp = hb.bench_tmp("herald-hostile-")
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write("bench bench-token-0123456789abcdef *\n")
    os.chmod(tokens, 0o600)
    h = hb.Herald(os.path.join(tmp, "data"), "--tokens-file", tokens)
    host, port = h.address.split(":")
    held: list = []

    def attacker() -> Client:
        client = Client.__new__(Client)
        client.sock = socket.create_connection((host, int(port)), timeout=30, source_address=("127.0.0.2", 0))
        client.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        client.conn.initiate_connection()
        client.streams, client.terminated, client.remote_settings, client.eof = {}, None, {}, False
        client.flush()
        return client

    try:
        before = h.proc_status()["VmRSS"]
        t0 = time.monotonic()
        # 1. Connection flood: args.flood connections from one address.
        accepted = refused_conn = 0
        for _ in range(args.flood):
            try:
                client = attacker()
                if client.pump():  # the server's SETTINGS: accepted (EOF: refused on accept)
                    accepted += 1
                    held.append(client)
                else:
                    refused_conn += 1
                    client.sock.close()
            except (ConnectionResetError, BrokenPipeError, h2.exceptions.ProtocolError):
                refused_conn += 1
        # 2. Slow unauthenticated bodies: 4 Health calls per connection on the
        # first args.connections accepted, each declaring 64,000 bytes and sending 63,000.
        body_refused = body_held = 0
        for client in held[:args.connections]:
            ids = []
            for _ in range(4):
                sid = client.start(HEALTH_CHECK)
                client.send(sid, struct.pack(">BI", 0, 64_000))
                client.send_flow_controlled(sid, b"\x00" * 63_000)
                ids.append(sid)
            client.call(HEALTH_CHECK, EMPTY_FRAME)  # in order: the four were processed
            body_refused += sum(1 for sid in ids if client.streams[sid].grpc_status == 8)
            body_held += sum(1 for sid in ids if not client.streams[sid].done)
        # 3. Watch streams: 17 per connection on the next args.connections (16 allowed).
        watch_refused = watch_open = 0
        for client in held[args.connections:2 * args.connections]:
            ids = []
            for _ in range(17):
                sid = client.start("/grpc.health.v1.Health/Watch")
                client.send(sid, EMPTY_FRAME, end_stream=True)
                ids.append(sid)
            client.call(HEALTH_CHECK, EMPTY_FRAME)
            watch_refused += sum(1 for sid in ids if client.streams[sid].grpc_status == 8)
            watch_open += sum(1 for sid in ids if not client.streams[sid].done)
        fill_s = time.monotonic() - t0
        # Measured while all of it is held.
        during = health_latency(h.address, tmp, args.health_n)["lat_ms"]
        s = hb.stubs()
        import grpc
        with grpc.insecure_channel(h.address) as channel:
            reply = s.pg.PushServiceStub(channel).Schedule(
                hb.schedule_request(after=time.time() + 86_400), timeout=30,
                metadata=[("authorization", "Token bench-token-0123456789abcdef")])
        status = h.proc_status()
        print(f"unauthenticated: from 127.0.0.2 in {fill_s:.1f} s")
        print(f"  connections: {args.flood} attempted, {accepted} accepted, {refused_conn} refused (per-peer cap)")
        print(f"  slow Health bodies: {args.connections} x 4 x 63,000 of 64,000 declared: "
              f"{body_held} held, {body_refused} refused RESOURCE_EXHAUSTED")
        print(f"  Watch: {args.connections} x 17: {watch_open} open, {watch_refused} refused RESOURCE_EXHAUSTED")
        print(f"  Health from 127.0.0.1 during: n={len(during)} p50={hb.pct(during, 50):.2f} ms "
              f"p99={hb.pct(during, 99):.2f} ms")
        print(f"  Schedule with a token from 127.0.0.1 during: OK ({len(reply.message_id)}-char id)")
        print(f"  server RSS before {before}, while held {status['VmRSS']}, peak {status['VmHWM']}")
        peak_mib = int(status["VmHWM"].split()[0]) / 1024
        p99 = hb.pct(during, 99)
        ok = p99 <= 50 and peak_mib <= 256 and len(during) == args.health_n
        print(f"  budget Health p99 <= 50 ms, RSS <= 256 MiB, Schedule served: {'MET' if ok else 'MISSED'} "
              f"({p99:.2f} ms, {peak_mib:.0f} MiB)")
    finally:
        for client in held:
            client.sock.close()
        h.stop()
        hb.rmtree(tmp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", nargs="*", default=["health-under-render", "partial-bodies", "no-token-bodies", "unauthenticated"])
    parser.add_argument("--keys", type=int, default=900, help="user_info keys in the large Render")
    parser.add_argument("--render-n", type=int, default=400, help="large Renders sent by the four clients")
    parser.add_argument("--health-n", type=int, default=2000, help="Health calls per latency run")
    parser.add_argument("--connections", type=int, default=60)
    parser.add_argument("--flood", type=int, default=400, help="unauthenticated: connections tried from 127.0.0.2")
    args = parser.parse_args()
    print(f"# bench/hostile.sh — {time.strftime('%Y-%m-%d %H:%M:%S')} — load {hb.loadavg()}")
    for part in args.part:
        {"health-under-render": health_under_render, "partial-bodies": partial_bodies,
         "no-token-bodies": no_token_bodies, "unauthenticated": unauthenticated}[part](args)


if __name__ == "__main__":
    main()
