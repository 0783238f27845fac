#!/usr/bin/env python3
"""Per-call costs from two callgrind dumps of the same server process.

    callgrind_diff.py SHORT LONG CALLS [--top K] [--demangle CMD]

SHORT holds the events of a run of N calls, LONG of 2N calls (same process,
same connection count): LONG - SHORT is the cost of N calls with the fixed
costs (connections, warm-up) cancelled. CALLS is N. Prints the total
instructions per call, calls per call of the allocation and reference-count
entry points, and the top functions by exclusive and by inclusive
instructions per call (inclusive = own + everything called from it;
recursion counts twice).

Only the Ir event is read (callgrind's default). Works on dumps written with
--dump-instr=no (line positions) or yes (address positions).
"""
import argparse
import collections
import re
import subprocess
import sys

# Entry points whose call counts are worth a line of their own.
COUNTED = [
    "malloc", "free", "calloc", "realloc", "swift_allocObject", "swift_deallocObject",
    "swift_retain", "swift_release", "swift_bridgeObjectRetain", "swift_bridgeObjectRelease",
    "swift_beginAccess", "swift_getGenericMetadata", "swift_dynamicCast",
]


def parse(path):
    """Returns (total Ir, self Ir by function, called Ir by caller, call counts by callee)."""
    names = {"fn": {}, "ob": {}}
    self_cost = collections.Counter()
    out_cost = collections.Counter()
    call_count = collections.Counter()
    pair_count = collections.Counter()
    total = 0
    fn = ob = cfn = cob = None
    pending_calls = None
    compressed = re.compile(r"\((\d+)\)(?: (.*))?$")

    def name(kind, text):
        match = compressed.match(text)
        if not match:
            return text
        ident, value = match.groups()
        if value is not None:
            names[kind][ident] = value
            return value
        return names[kind].get(ident, "?" + ident)

    with open(path, errors="replace") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if not line:
                continue
            head = line[0]
            if head.isdigit() or head in "+-*":
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                if pending_calls is not None:
                    out_cost[(ob, fn)] += cost
                    call_count[(cob or ob, cfn)] += pending_calls
                    pair_count[(fn, cfn)] += pending_calls
                    pending_calls = None
                    cob = None  # the callee's object is given per call
                else:
                    self_cost[(ob, fn)] += cost
                continue
            if line.startswith(("summary:", "totals:")):
                total = int(line.split(":", 1)[1].split()[0])
                continue
            key, _, value = line.partition("=")
            if key == "fn":
                fn = name("fn", value)
            elif key == "ob":
                ob = name("ob", value)
            elif key == "cfn":
                cfn = name("fn", value)
            elif key == "cob":
                cob = name("ob", value)
            elif key == "calls":
                pending_calls = int(value.split()[0])
    if total == 0:
        total = sum(self_cost.values())
    return total, self_cost, out_cost, call_count, pair_count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("short")
    parser.add_argument("long")
    parser.add_argument("calls", type=int)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--callers", action="append", default=[],
                        help="also list who calls this function, in calls per call (repeatable)")
    parser.add_argument("--demangle", default="swift demangle --simplified --compact")
    args = parser.parse_args()

    s_total, s_self, s_out, s_count, s_pairs = parse(args.short)
    l_total, l_self, l_out, l_count, l_pairs = parse(args.long)
    n = args.calls
    per_call = (l_total - s_total) / n
    print(f"instructions per call: {per_call:.0f}  (short run {s_total}, long run {l_total}, N={n})")

    def per(counter_l, counter_s, key):
        return (counter_l.get(key, 0) - counter_s.get(key, 0)) / n

    by_name = collections.Counter()
    for key in set(l_count) | set(s_count):
        by_name[key[1]] += per(l_count, s_count, key)
    counted = [f"{entry} {by_name.get(entry, 0):.2f}" for entry in COUNTED if abs(by_name.get(entry, 0)) >= 0.005]
    print("calls per call: " + ", ".join(counted))

    for callee in args.callers:
        pairs = {k: per(l_pairs, s_pairs, k) for k in set(l_pairs) | set(s_pairs) if k[1] == callee}
        top = sorted((k for k in pairs if abs(pairs[k]) >= 0.01), key=lambda k: -pairs[k])
        readable = dict(zip([k[0] for k in top], demangle([k[0] for k in top], args.demangle)))
        print(f"callers of {callee} (calls per call):")
        for k in top:
            print(f"  {pairs[k]:7.2f}  {readable.get(k[0], k[0])[:150]}")
    if args.top <= 0:
        return 0
    keys = set(l_self) | set(s_self) | set(l_out) | set(s_out)
    exclusive = {k: per(l_self, s_self, k) for k in keys}
    inclusive = {k: exclusive[k] + per(l_out, s_out, k) for k in keys}
    top_ex = sorted(keys, key=lambda k: -exclusive[k])[: args.top]
    # Frames that hold (nearly) everything (thread start, the event loop) say nothing.
    top_in = sorted((k for k in keys if inclusive[k] < 0.9 * per_call), key=lambda k: -inclusive[k])[: args.top]
    mangled = sorted({k[1] for k in top_ex + top_in if k[1]})
    readable = dict(zip(mangled, demangle(mangled, args.demangle)))

    def show(title, keys_, table):
        print(title)
        for k in keys_:
            obj = (k[0] or "?").rsplit("/", 1)[-1]
            text = readable.get(k[1], k[1])
            if len(text) > 150:
                text = text[:147] + "..."
            print(f"  {table[k]:9.1f}  {obj:<22} {text}")

    show("exclusive instructions per call (top):", top_ex, exclusive)
    show("inclusive instructions per call (top, below 90 % of the total):", top_in, inclusive)


def demangle(names, command):
    try:
        result = subprocess.run(
            command.split(), input="\n".join(names) + "\n", capture_output=True, text=True, timeout=60, check=True)
        lines = result.stdout.split("\n")
        if len(lines) >= len(names):
            return lines[: len(names)]
    except (OSError, subprocess.SubprocessError):
        pass
    return names


if __name__ == "__main__":
    sys.exit(main())
