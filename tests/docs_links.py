#!/usr/bin/python3
"""Every relative link in README.md and docs/ resolves: the file or folder exists, and an anchor
(#...) names a heading of that Markdown file (GitHub's slugs). Links to other sites are not
followed (there is no network here). And the docs keep their shape: the README is a front page
(at most 150 lines, none over 200 characters outside code blocks), the benchmarks page is the
method and the targets (under 400 lines), and the results table is the bench's own file.

usage: docs_links.py <repository root>
"""
import os
import re
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[`*_]", "", s)
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    out, fence = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,6} ", line):
            out.add(slug(line.lstrip("#")))
    return out


files = [os.path.join(root, "README.md")]
for d, _, names in os.walk(os.path.join(root, "docs")):
    files += [os.path.join(d, n) for n in names if n.endswith(".md")]
bad, checked = [], 0
for f in sorted(files):
    fence = False
    for n, line in enumerate(open(f, encoding="utf-8"), 1):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        for _, target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            checked += 1
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            where = "%s:%d: %s" % (os.path.relpath(f, root), n, target)
            if not os.path.exists(dest):
                bad.append(where + " (no such file)")
            elif anchor and (not dest.endswith(".md") or anchor not in anchors(dest)):
                bad.append(where + " (no such heading)")


def shape_problems():
    out = []
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read().split("\n")
    if len(readme) > 151:  # the last newline makes an empty last item
        out.append("README.md: %d lines (at most 150: the manual is docs/)" % (len(readme) - 1))
    fence = False
    for n, line in enumerate(readme, 1):
        if line.startswith("```"):
            fence = not fence
        elif not fence and len(line) > 200:
            out.append("README.md:%d: %d characters (at most 200 outside code blocks)" % (n, len(line)))
    bench = os.path.join(root, "docs", "development", "benchmarks.md")
    lines = len(open(bench, encoding="utf-8").read().splitlines())
    if lines >= 400:
        out.append("docs/development/benchmarks.md: %d lines (under 400: figures of runs "
                   "belong in benchmark-results.md, which the bench writes)" % lines)
    results = os.path.join(root, "docs", "development", "benchmark-results.md")
    if "Written by `packaging/setup.sh bench`" not in open(results, encoding="utf-8").read():
        out.append("docs/development/benchmark-results.md: not the bench's own file")
    return out


bad += shape_problems()
for b in bad:
    print("broken link:" if "(no such" in b else "docs shape:", b)
print("%d relative links in %d files checked, %d broken" % (checked, len(files), len(bad)))
sys.exit(1 if bad else 0)
