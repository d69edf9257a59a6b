#!/usr/bin/python3
"""Writes the results table of a `packaging/setup.sh bench` run from what the run printed.

Every line the benchmarks printed against a target (or judged met or not), and L1's latency and
CPU lines, becomes a row under the step ("==> ...") that printed it, with the run's commit, date
and machine on top; a line printed alike by several runs of a step is one row with their count.
The table is the run's own figures: nothing here is typed by hand, and a figure a benchmark did
not print is not there.

usage: bench_results.py BENCH_LOG OUTPUT.md [--commit REV]
  --commit: the commit the run built (setup.sh bench reads it when the run starts); default: the
            work tree's now
"""
import os
import platform
import re
import subprocess
import sys
from datetime import datetime, timezone

STEP = re.compile(r"==> \[\d+:\d+\] (?:benchmark: )?(.*?)(?:\x1b\[0m)?$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# A figure: against a target, judged met or not, or L1's Ready -> patch latency and host CPU.
FIGURE = re.compile(r"target|\((not )?met\)|Ready -> status patch stored|CPU seconds for the load")


def rows(log_lines):
    step, out = "", []
    for raw in log_lines:
        line = ANSI.sub("", raw.rstrip("\n"))
        m = STEP.search(raw.rstrip("\n"))
        if m:
            # The step's name without its explanation in parentheses.
            step = re.sub(r" \([^)]*\)", "", ANSI.sub("", m.group(1)))
            continue
        if FIGURE.search(line):
            out.append((step, line.strip()))
    # A line printed alike by several runs of one step: one row, with the count.
    rows, seen = [], {}
    for step, line in out:
        if (step, line) in seen:
            rows[seen[(step, line)]][2] += 1
        else:
            seen[(step, line)] = len(rows)
            rows.append([step, line, 1])
    return [(step, line if n == 1 else "%s (%d runs alike)" % (line, n)) for step, line, n in rows]


def machine():
    cpu = ""
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return "%d cores (%s), %.0f GiB, %s" % (os.cpu_count() or 0, cpu or platform.machine(), mem,
                                          platform.platform(terse=True))


def commit(root):
    try:
        rev = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        rev = "unknown"
    return rev


def main():
    args = sys.argv[1:]
    rev = None
    if len(args) == 4 and args[2] == "--commit":
        rev = args[3]
        args = args[:2]
    if len(args) != 2:
        sys.exit(__doc__)
    log, output = args
    found = rows(open(log, encoding="utf-8", errors="replace"))
    if not found:
        sys.exit("bench_results.py: %s has no line against a target: the run failed early?" % log)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open(output, "w", encoding="utf-8") as f:
        f.write("# Benchmark results\n\n")
        f.write("Written by `packaging/setup.sh bench` (`packaging/bench_results.py`); do not edit by\n")
        f.write("hand. What each benchmark measures, and its target: [benchmarks](benchmarks.md).\n\n")
        f.write("- commit: `%s`\n- finished: %s\n- machine: %s\n\n" % (rev or commit(root), when,
                                                                       machine()))
        f.write("| step | figure |\n|---|---|\n")
        for step, line in found:
            f.write("| %s | %s |\n" % (step.replace("|", "\\|"), line.replace("|", "\\|")))
    print("bench_results.py: %d figures written to %s" % (len(found), output))


if __name__ == "__main__":
    main()
