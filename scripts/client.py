#!/usr/bin/env python3
"""A small Herald client for humans (stock grpcio, stubs generated from Protos/).

    .venv/bin/python scripts/client.py status
    .venv/bin/python scripts/client.py register --user alice --token <64 hex> --locale de-CH
    .venv/bin/python scripts/client.py schedule --user alice --key hello-1 --title Hallo --body Welt [--after 60]
    .venv/bin/python scripts/client.py cancel --user alice --key hello-1
    .venv/bin/python scripts/client.py render --title Hi --body There [--locale de] [--platform android]
    .venv/bin/python scripts/client.py get (--id MESSAGE_ID | --key hello-1)
    .venv/bin/python scripts/client.py list --user alice [--campaign daily] [--state sent] [--page-size 20] [--all]
    .venv/bin/python scripts/client.py report --campaign daily [--after 2026-11-01T00:00:00Z] [--before …]
    .venv/bin/python scripts/client.py campaign --campaign daily      (the report as a table)
    .venv/bin/python scripts/client.py unregister --token <64 hex>

Options common to all: --address 127.0.0.1:50051, --bundle com.example.app,
--auth-token TOKEN (or env HERALD_TOKEN)."""
from __future__ import annotations

import argparse
import datetime as dt
import importlib
import os
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_stubs():
    from grpc_tools import protoc

    out = pathlib.Path(tempfile.gettempdir()) / "herald-client-stubs"
    protos = sorted(str(p.relative_to(ROOT / "Protos")) for p in (ROOT / "Protos" / "herald").rglob("*.proto"))
    include = pathlib.Path(protoc.__file__).parent / "_proto"
    out.mkdir(exist_ok=True)
    if protoc.main(["protoc", f"-I{ROOT / 'Protos'}", f"-I{include}", f"--python_out={out}",
                    f"--grpc_python_out={out}", *protos]) != 0:
        sys.exit("generating stubs from Protos/ failed")
    sys.path.insert(0, str(out))
    names = ["types_pb2", "push_service_pb2", "push_service_pb2_grpc", "device_service_pb2", "device_service_pb2_grpc",
             "read_side_pb2"]
    return {name: importlib.import_module(f"herald.v1.{name}") for name in names}


def main() -> int:
    parser = argparse.ArgumentParser(description="A small Herald client.")
    parser.add_argument("--address", default=os.environ.get("HERALD_ADDRESS", "127.0.0.1:50051"))
    parser.add_argument("--bundle", default="com.example.app")
    parser.add_argument("--platform", choices=["ios", "android"], default="ios")
    parser.add_argument("--auth-token", default=os.environ.get("HERALD_TOKEN"))
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("status")
    reg = sub.add_parser("register")
    reg.add_argument("--user", required=True)
    reg.add_argument("--token", required=True, help="APNs device token (hex)")
    reg.add_argument("--locale", default="en")
    reg.add_argument("--timezone", default="UTC")
    sch = sub.add_parser("schedule")
    sch.add_argument("--user", required=True)
    sch.add_argument("--key", default="", help="idempotency key (generated when empty)")
    sch.add_argument("--campaign", default="manual")
    sch.add_argument("--title", required=True)
    sch.add_argument("--body", required=True)
    sch.add_argument("--after", type=float, default=0, help="seconds until the window starts")
    sch.add_argument("--hours", type=int, default=1, help="window length")
    sch.add_argument("--method", choices=["traditional", "context_aware", "ab"], default="traditional")
    can = sub.add_parser("cancel")
    can.add_argument("--user", required=True)
    can.add_argument("--key", required=True)
    can.add_argument("--campaign", default="manual")
    ren = sub.add_parser("render")
    ren.add_argument("--title", required=True)
    ren.add_argument("--body", required=True)
    ren.add_argument("--locale", default="")
    get = sub.add_parser("get", help="a message's state, timeline and per-device outcomes")
    which = get.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", default="")
    which.add_argument("--key", default="")
    lst = sub.add_parser("list", help="a user's messages, newest first")
    lst.add_argument("--user", required=True)
    lst.add_argument("--campaign", default="")
    lst.add_argument("--state", action="append", default=[], help="e.g. sent, no_devices (repeatable)")
    lst.add_argument("--page-size", type=int, default=0)
    lst.add_argument("--page-token", default="")
    lst.add_argument("--all", action="store_true", help="follow next_page_token to the end")
    for name, text in (("report", "CampaignReport as the protobuf text"), ("campaign", "CampaignReport as a table")):
        rep = sub.add_parser(name, help=text)
        rep.add_argument("--campaign", required=True)
        rep.add_argument("--after", default="", help="only messages created at or after (RFC 3339)")
        rep.add_argument("--before", default="", help="only messages created before (RFC 3339)")
    unr = sub.add_parser("unregister")
    unr.add_argument("--token", required=True, help="device token")
    evt = sub.add_parser("events", help="tail the bundle's delivery events (StreamEvents), one line each")
    evt.add_argument("--cursor", default="", help="resume after this cursor (printed first on each line)")
    evt.add_argument("--from-start", action="store_true", help="from the oldest event kept")
    evt.add_argument("--campaign", default="")
    evt.add_argument("--kind", action="append", default=[], help="e.g. sent, device_removed (repeatable)")
    evt.add_argument("--count", type=int, default=0, help="stop after this many events (0: never)")
    args = parser.parse_args()

    import grpc

    s = load_stubs()
    t, p, d, r = s["types_pb2"], s["push_service_pb2"], s["device_service_pb2"], s["read_side_pb2"]
    platform = t.PLATFORM_IOS if args.platform == "ios" else t.PLATFORM_ANDROID
    metadata = [("authorization", f"Token {args.auth_token}")] if args.auth_token else None
    channel = grpc.insecure_channel(args.address)
    push = s["push_service_pb2_grpc"].PushServiceStub(channel)
    devices = s["device_service_pb2_grpc"].DeviceServiceStub(channel)
    try:
        if args.command == "status":
            # Without a token (when tokens are configured) Status shows state and counts only.
            reply = push.Status(p.StatusRequest(), metadata=metadata, timeout=10)
        elif args.command == "register":
            reply = devices.RegisterDevice(d.RegisterDeviceRequest(
                bundle_id=args.bundle, platform=platform, user_id=args.user, device_token=args.token,
                locale=args.locale, timezone=args.timezone, environment=t.APNS_ENVIRONMENT_SANDBOX),
                metadata=metadata, timeout=10)
        elif args.command == "schedule":
            method = {"traditional": t.DELIVERY_METHOD_TRADITIONAL, "context_aware": t.DELIVERY_METHOD_CONTEXT_AWARE,
                      "ab": t.DELIVERY_METHOD_UNSPECIFIED}[args.method]
            request = p.ScheduleRequest(
                bundle_id=args.bundle, platform=platform, user_id=args.user, campaign_id=args.campaign,
                idempotency_key=args.key, delivery_method=method, deliver_within_hours=args.hours,
                content=t.Content(title=t.LocalizedText(text=args.title), body=t.LocalizedText(text=args.body)))
            if args.after:
                start = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=args.after)
                request.deliver_after = start.isoformat()
            reply = push.Schedule(request, metadata=metadata, timeout=10)
        elif args.command == "cancel":
            reply = push.Cancel(p.CancelRequest(
                bundle_id=args.bundle, platform=platform, user_id=args.user, campaign_id=args.campaign,
                idempotency_key=args.key), metadata=metadata, timeout=10)
        elif args.command == "get":
            reply = push.GetMessage(r.GetMessageRequest(bundle_id=args.bundle, message_id=args.id, idempotency_key=args.key),
                                    metadata=metadata, timeout=10)
        elif args.command == "list":
            states = [t.MessageState.Value("MESSAGE_STATE_" + name.upper()) for name in args.state]
            token = args.page_token
            while True:
                reply = push.ListMessages(r.ListMessagesRequest(
                    bundle_id=args.bundle, user_id=args.user, campaign_id=args.campaign, states=states,
                    page_size=args.page_size, page_token=token), metadata=metadata, timeout=10)
                if not args.all or not reply.next_page_token:
                    break
                print(reply, end="")
                token = reply.next_page_token
        elif args.command in ("report", "campaign"):
            reply = push.CampaignReport(r.CampaignReportRequest(
                bundle_id=args.bundle, campaign_id=args.campaign, created_after=args.after, created_before=args.before),
                metadata=metadata, timeout=30)
            if args.command == "campaign":
                print_campaign(reply, t, r)
                return 0
        elif args.command == "events":
            kinds = [r.EventKind.Value("EVENT_KIND_" + name.upper()) for name in args.kind]
            stream = push.StreamEvents(r.StreamEventsRequest(
                bundle_id=args.bundle, cursor=args.cursor, from_start=args.from_start, campaign_id=args.campaign,
                kinds=kinds), metadata=metadata)
            seen = 0
            for event in stream:
                kind = r.EventKind.Name(event.kind).removeprefix("EVENT_KIND_").lower()
                device = f" device={event.device_token}" if event.device_token else ""
                reason = f" reason={event.reason}" if event.reason else ""
                print(f"{event.cursor} {event.at} {kind} message={event.message_id} key={event.idempotency_key} "
                      f"user={event.user_id} campaign={event.campaign_id}{device}{reason}", flush=True)
                seen += 1
                if args.count and seen >= args.count:
                    stream.cancel()
                    break
            return 0
        elif args.command == "unregister":
            reply = devices.UnregisterDevice(d.UnregisterDeviceRequest(bundle_id=args.bundle, device_token=args.token),
                                             metadata=metadata, timeout=10)
        else:
            reply = push.Render(p.RenderRequest(
                bundle_id=args.bundle, platform=platform, locale=args.locale, device_token="ab" * 32 if platform == t.PLATFORM_IOS else "",
                content=t.Content(title=t.LocalizedText(text=args.title), body=t.LocalizedText(text=args.body))),
                metadata=metadata, timeout=10)
    except grpc.RpcError as error:
        print(f"{error.code().name}: {error.details()}", file=sys.stderr)
        return 1
    print(reply, end="")
    return 0


def print_campaign(reply, t, r) -> None:
    """CampaignReport as a table, and the A/B verdict."""
    columns = ["scheduled", "handed_off", "sent", "fallback_sent", "displayed", "opened", "cancelled", "failed",
               "expired", "no_devices", "delivered"]
    print(f"{'cohort':<14} {'assignment':<14} " + " ".join(f"{c:>10}" for c in columns) + f" {'display%':>9} {'open%':>7}")
    for row in reply.cohorts:
        cohort = t.DeliveryMethod.Name(row.cohort).removeprefix("DELIVERY_METHOD_").lower()
        assignment = r.Assignment.Name(row.assignment).removeprefix("ASSIGNMENT_").lower()
        print(f"{cohort:<14} {assignment:<14} " + " ".join(f"{getattr(row, c):>10}" for c in columns)
              + f" {100 * row.display_rate:>8.1f}% {100 * row.open_rate:>6.1f}%")
    if reply.HasField("ab_comparison"):
        ab = reply.ab_comparison
        print(f"A/B open rate: context-aware {100 * ab.context_aware_open_rate:.2f}% (n={ab.context_aware_delivered}) vs "
              f"traditional {100 * ab.traditional_open_rate:.2f}% (n={ab.traditional_delivered}); difference "
              f"{100 * ab.open_rate_difference:+.2f} pp, 95% CI [{100 * ab.ci95_low:+.2f}, {100 * ab.ci95_high:+.2f}] pp")
    else:
        print("A/B open rate: no comparison (a cohort of the split has no delivered message)")


if __name__ == "__main__":
    sys.exit(main())
