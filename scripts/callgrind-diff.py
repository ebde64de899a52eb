#!/usr/bin/env python3
"""Per-function instruction counts of two builds' callgrind profiles, per request.

    scripts/callgrind-diff.py BASE.out:REQUESTS NEW.out:REQUESTS [TOP]
    scripts/callgrind-diff.py BASE.short.out:N BASE.long.out:N NEW.short.out:N NEW.long.out:N [TOP]

With one profile a side, each function's self cost is divided by its run's
request count (startup included). With two a side (the short and long runs of
scripts/instructions-per-request.sh --marginal), it is the long run's count less
the short run's, divided by the extra requests: startup cancels out. Counts are
by function, inlined code included wherever it came from. Prints the
TOP (default 40) largest differences, then the totals.
"""
import re
import subprocess
import sys

LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?)(\s+\[.*\])?$")


def counts(path):
    out = subprocess.run(
        ["callgrind_annotate", "--auto=no", "--threshold=100", path],
        check=True, capture_output=True, text=True,
    ).stdout
    result = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m and "PROGRAM TOTALS" not in m.group(2):
            # `file:function`; the file is where inlined code came from, which
            # moves when code does: counted by function.
            name = m.group(2).split(":", 1)[-1]
            result[name] = result.get(name, 0) + int(m.group(1).replace(",", ""))
    return result


def side(specs):
    """Instructions per request, by function, of one or two `profile:requests`."""
    runs = []
    for spec in specs:
        path, n = spec.rsplit(":", 1)
        runs.append((counts(path), int(n)))
    if len(runs) == 1:
        c, n = runs[0]
        return {k: v / n for k, v in c.items()}
    (c1, n1), (c2, n2) = runs
    return {k: (c2.get(k, 0) - c1.get(k, 0)) / (n2 - n1) for k in set(c1) | set(c2)}


def main():
    args = sys.argv[1:]
    top = 40
    if args and ":" not in args[-1]:
        top = int(args.pop())
    if len(args) not in (2, 4):
        sys.exit(__doc__)
    half = len(args) // 2
    a, b = side(args[:half]), side(args[half:])
    rows = sorted(
        ((b.get(k, 0) - a.get(k, 0), a.get(k, 0), b.get(k, 0), k) for k in set(a) | set(b)),
        key=lambda r: -abs(r[0]),
    )
    print(f"{'delta':>9} {'base':>9} {'new':>9}  function (instructions per request)")
    for d, pa, pb, name in rows[:top]:
        print(f"{d:>+9.0f} {pa:>9.0f} {pb:>9.0f}  {name[:150]}")
    ta, tb = sum(a.values()), sum(b.values())
    print(f"{tb - ta:>+9.0f} {ta:>9.0f} {tb:>9.0f}  (all functions listed)")


if __name__ == "__main__":
    main()
