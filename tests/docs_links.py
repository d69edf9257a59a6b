#!/usr/bin/python3
"""Every relative link in README.md and docs/ resolves: the file or folder exists, and an anchor
(#...) names a heading of that Markdown file (GitHub's slugs). Links to other sites are not
followed (there is no network here).

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
for b in bad:
    print("broken link:", b)
print("%d relative links in %d files checked, %d broken" % (checked, len(files), len(bad)))
sys.exit(1 if bad else 0)
