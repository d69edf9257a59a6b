#!/usr/bin/env python3
"""clang-tidy over what a build tree compiles: host/, model/, plugins/ and tests/ (packaging/setup.sh lint).

    packaging/lint.py BUILD_DIR [--jobs N] [SOURCE...]

With SOURCEs (paths from the top of the repository), only the units that hold one of them.

Each translation unit of BUILD_DIR's compile_commands.json that holds a tracked source is linted
once. A unity build's file (CI's sanitizer trees: CMAKE_UNITY_BUILD) holds up to sixteen sources
of one target, so clang-tidy walks the Boost, Beast and nlohmann headers once for all of them
instead of once each: the lint takes 10 CPU-minutes instead of about 25. Diagnostics in the
sources are then diagnostics in included files, which the header filter passes (tests/ added for
the tests' units, with their narrower checks from tests/.clang-tidy).

Prints every diagnostic; exits 1 when there is one or clang-tidy failed without one (a crash),
2 on a usage error.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time

# The header filter of .clang-tidy, with the tests added for the tests' unity files.
TESTS_HEADER_FILTER = r".*/(host/src/|model/|plugins/|tests/|sdk/include/kuscia_host/(plugin|config_reader|testing/)).*"
# tests/.clang-tidy's narrowing, for a unity file (which lives in the build tree, so clang-tidy
# finds the top-level configuration for it, not the tests').
TESTS_CHECKS = "-modernize-*,-performance-*"
# A unity file includes .cc files by design.
UNITY_CHECKS = "-bugprone-suspicious-include"
INCLUDE = re.compile(r'^#include "(.+)"\s*$')

# GCC-only flags clang-tidy (clang) refuses, and precompiled headers: without them every source
# must include what it uses, and clang-tidy parses headers faster than it walks a PCH's whole AST.
DROP = [
    re.compile(r" -fno-gnu-unique"),
    re.compile(r" -Wshadow=local"),
    re.compile(r" -Winvalid-pch"),
    re.compile(r" -include \S*cmake_pch\.hxx"),
    re.compile(r" -Xclang -include-pch -Xclang \S*"),
    re.compile(r" -Xclang -include -Xclang \S*cmake_pch\.hxx"),
]


def tracked_sources(root):
    out = subprocess.run(
        ["git", "ls-files", "host/*.cc", "model/*.cc", "plugins/*.cc", "tests/*.cc"],
        cwd=root, check=True, capture_output=True, text=True).stdout
    return {os.path.join(root, f) for f in out.split()}


def units(root, entries):
    """(main file, its tracked sources) for every unit that holds one."""
    tracked = tracked_sources(root)
    found = []
    for e in entries:
        main = e["file"]
        if "/Unity/unity_" in main:
            with open(main, encoding="utf-8") as f:
                sources = [m.group(1) for m in map(INCLUDE.match, f) if m]
        else:
            sources = [main]
        sources = [s for s in sources if s in tracked]
        if sources:
            found.append((main, sources))
    return found


def where(root, sources):
    """A unit's sources as one line: their common folder and how many."""
    folder = os.path.relpath(os.path.commonpath([os.path.dirname(s) for s in sources]), root)
    return folder if len(sources) > 1 else os.path.relpath(sources[0], root)


def lint_unit(db, root, main, sources):
    cmd = ["clang-tidy", "-p", db, "--quiet"]
    checks = []
    if main not in sources:
        # A unity file is in the build tree: name the configuration rather than let clang-tidy
        # look for one above the build tree.
        cmd.append("--config-file=" + os.path.join(root, ".clang-tidy"))
        checks.append(UNITY_CHECKS)
        if any(s.startswith(os.path.join(root, "tests") + "/") for s in sources):
            checks.append(TESTS_CHECKS)
            cmd.append("--header-filter=" + TESTS_HEADER_FILTER)
    if checks:
        cmd.append("--checks=" + ",".join(checks))
    cmd.append(main)
    started = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    out = r.stdout
    if r.returncode != 0 and not re.search(r"(warning|error):", out):
        # It failed without a diagnostic (a crash): say so rather than pass the unit.
        out += f"{main}: error: clang-tidy exited with {r.returncode}:\n{r.stderr[-2000:]}\n"
    return out, time.monotonic() - started


def main():
    p = argparse.ArgumentParser(description="clang-tidy over a build tree's sources")
    p.add_argument("build_dir")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("sources", nargs="*", help="lint only the units holding these sources")
    a = p.parse_intermixed_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        with open(os.path.join(a.build_dir, "compile_commands.json"), encoding="utf-8") as f:
            entries = json.load(f)
    except OSError as e:
        print(f"lint: {e}: configure the build tree first", file=sys.stderr)
        return 2
    for e in entries:
        for d in DROP:
            e["command"] = d.sub("", e["command"])
    todo = units(root, entries)
    if a.sources:
        wanted = {os.path.join(root, s) for s in a.sources}
        todo = [(m, s) for m, s in todo if wanted & set(s)]
        if not todo:
            print("lint: no unit of this build holds " + " ".join(a.sources), file=sys.stderr)
            return 2
    n = sum(len(s) for _, s in todo)
    print(f"lint: {n} sources in {len(todo)} translation units, {a.jobs} at a time", file=sys.stderr)
    with tempfile.TemporaryDirectory() as db:
        with open(os.path.join(db, "compile_commands.json"), "w", encoding="utf-8") as f:
            json.dump(entries, f)
        outs = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            futures = {pool.submit(lint_unit, db, root, *u): u for u in todo}
            for done, f in enumerate(concurrent.futures.as_completed(futures), 1):
                out, seconds = f.result()
                outs.append(out)
                _, sources = futures[f]
                print(f"lint: [{done}/{len(todo)}] {seconds:.0f} s {where(root, sources)}"
                      f" ({len(sources)} source{'s' if len(sources) > 1 else ''})"
                      f"{' !' if out.strip() else ''}", file=sys.stderr)
    report = "".join(outs)
    if re.search(r"(warning|error):", report):
        print(report, end="")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
