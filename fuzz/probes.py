#!/usr/bin/env python3
"""Scaling probes: hostile inputs of doubling size, so a cost that grows
faster than the input shows as a time ratio well above 2 per doubling
(libFuzzer's -timeout only catches what is slow within -max_len; a quadratic
cost at 64 KiB is a disaster at the server's 4 MiB message limit).

    .venv/bin/python fuzz/probes.py [OUT_DIR]      (default .build-fuzz/probes)

Writes OUT_DIR/<target>/<probe>-<n>; fuzz/probes.sh times them with the fuzz
binary. Not committed: rebuilt from this script.
"""
from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gen_seeds  # noqa: E402  (stubs and selector bytes)

SIZES = (1_000, 2_000, 4_000, 8_000)


def main() -> None:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".build-fuzz/probes")
    push, _, types = gen_seeds.stubs()
    ios = types.PLATFORM_IOS

    def write(target: str, name: str, data: bytes) -> None:
        (out / target).mkdir(parents=True, exist_ok=True)
        (out / target / name).write_bytes(data)

    for n in SIZES:
        # user_info with n keys: the writer sorts object keys.
        render = push.RenderRequest(bundle_id="com.example.app", platform=ios, content=types.Content(
            title=types.LocalizedText(text="t"), body=types.LocalizedText(text="b")))
        render.content.user_info.update({f"k{i:07d}": "v" for i in range(n, 0, -1)})
        write("requests", f"render-user-info-keys-{n}", bytes([gen_seeds.RENDER]) + render.SerializeToString(deterministic=True))
        # An `ios` override with n keys, merged into the payload root.
        render = push.RenderRequest(bundle_id="com.example.app", platform=ios, content=types.Content(
            title=types.LocalizedText(text="t"), body=types.LocalizedText(text="b")))
        render.ios.update({f"k{i:07d}": "v" for i in range(n, 0, -1)})
        write("requests", f"render-ios-override-keys-{n}", bytes([gen_seeds.RENDER]) + render.SerializeToString(deterministic=True))
        # n translations in title and body: locale sets are compared.
        locales = {f"x{i}": "t" for i in range(n)}
        content = types.Content(title=types.LocalizedText(translations=locales),
                                body=types.LocalizedText(translations=locales), default_locale="x0")
        render = push.RenderRequest(bundle_id="com.example.app", platform=ios, content=content, locale="x1")
        write("requests", f"render-translations-{n}", bytes([gen_seeds.RENDER]) + render.SerializeToString(deterministic=True))
        schedule = push.ScheduleRequest(bundle_id="com.example.app", platform=ios, user_id="u", campaign_id="c",
                                        deliver_within_hours=1, content=content)
        write("requests", f"schedule-translations-{n}", bytes([gen_seeds.SCHEDULE]) + schedule.SerializeToString(deterministic=True))
        # A JSON object of n keys, written in reverse key order.
        write("json", f"object-keys-{n}", json.dumps({f"k{i:07d}": i for i in range(n, 0, -1)}).encode())
        # n empty gRPC messages in 1-byte-to-64-KiB chunks.
        write("deframer", f"empty-messages-{n}", bytes([0xF0]) + b"\0\0\0\0\0" * n)
    print(f"probes written under {out}")


if __name__ == "__main__":
    main()
