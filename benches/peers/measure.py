"""Time whole processes in pairs, interleaved (A, B, A, B, ...), for
benches/peers.sh, and print one table.

    python3 benches/peers/measure.py \
        case NAME RUNS -- A-ARGV... ::: B-ARGV... \
        [case ...]

Every run has stdin, stdout and stderr on /dev/null. Wall time and peak
RSS come from separate runs, in the same interleaved rounds (A, B timed,
then A, B under GNU time), so that neither disturbs the other:

- wall time: posix_spawn, reaped with wait4, perf_counter_ns from before
  the spawn to after the reap;
- peak RSS: `/usr/bin/time -f %M` (KiB). Not wait4's ru_maxrss of our own
  child: a child spawned by this Python (vfork, or fork) starts out with
  Python's resident set (about 13 MB) counted in its maximum. GNU time's
  floor is its own, about 1 MB (`/usr/bin/time -f %M /bin/true`).

A run that exits non-zero stops the bench. Each case starts with one
untimed pair.

The case named `startup` is the start-up baseline: its A median is also
given as a share of A's median in every other case.
"""
import os
import shutil
import statistics
import sys
import tempfile
import time

GNU_TIME = "/usr/bin/time"
DEVNULL = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]


def parse(argv):
    cases, i = [], 0
    while i < len(argv):
        if argv[i] != "case" or argv[i + 3] != "--":
            sys.exit(f"measure.py: expected `case NAME RUNS -- A... ::: B...` at {argv[i:]}")
        name, runs, i = argv[i + 1], int(argv[i + 2]), i + 4
        end = argv.index("case", i) if "case" in argv[i:] else len(argv)
        block = argv[i:end]
        sep = block.index(":::")
        cases.append((name, runs, block[:sep], block[sep + 1:]))
        i = end
    return cases


def spawn(argv):
    """Run argv to its end; stop the bench unless it exits 0."""
    path = argv[0] if "/" in argv[0] else shutil.which(argv[0])
    pid = os.posix_spawn(path, argv, os.environ, file_actions=DEVNULL)
    _, status, _ = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"measure.py: exit {os.waitstatus_to_exitcode(status)}: {' '.join(argv)}")


def wall_ns(argv):
    t0 = time.perf_counter_ns()
    spawn(argv)
    return time.perf_counter_ns() - t0


def peak_rss_kib(argv, out):
    spawn([GNU_TIME, "-f", "%M", "-o", out, *argv])
    with open(out) as f:
        return int(f.read().split()[-1])


def main():
    cases = parse(sys.argv[1:])
    rows, medians = [], {}
    fd, rss_out = tempfile.mkstemp(prefix="peers-rss.")
    os.close(fd)
    try:
        for name, runs, a, b in cases:
            spawn(a), spawn(b)  # untimed: caches
            walls, rss = {"A": [], "B": []}, {"A": [], "B": []}
            for _ in range(runs):
                for who, argv in (("A", a), ("B", b)):
                    walls[who].append(wall_ns(argv))
                for who, argv in (("A", a), ("B", b)):
                    rss[who].append(peak_rss_kib(argv, rss_out))
            for who in ("A", "B"):
                medians[name, who] = statistics.median(walls[who])
                rows.append((name, who, runs, medians[name, who] / 1e6, min(walls[who]) / 1e6,
                             max(rss[who]) / 1024))
    finally:
        os.unlink(rss_out)

    print(f"{'workload':<10} {'who':<3} {'runs':>4} {'median_ms':>10} {'min_ms':>9} "
          f"{'peak_rss_MB':>12} {'B/A_median':>11}")
    for name, who, runs, med, low, mb in rows:
        ratio = f"{medians[name, 'B'] / medians[name, 'A']:.1f}x" if who == "B" else ""
        print(f"{name:<10} {who:<3} {runs:>4} {med:>10.2f} {low:>9.2f} {mb:>12.1f} {ratio:>11}")
    if ("startup", "A") in medians:
        base = medians["startup", "A"]
        shares = ", ".join(f"{name} {100 * base / medians[name, 'A']:.0f}%"
                           for name, *_ in cases if name != "startup")
        print(f"A's start-up (startup A median, {base / 1e6:.2f} ms) as a share of A's median: {shares}")


main()
