#!/usr/bin/python3
"""No function of host/, model/, plugins/ or sdk/ is longer than 80 lines, unless it is a table:
a function whose body the line before it marks with `// A table:` (data laid out one item a line,
such as a list of metrics or a command line's options).

A function is a body in braces that opens after a parameter list at namespace or class scope;
its length is from the line of its name to its closing brace. Comments, strings and raw strings
are blanked before counting braces, so braces inside them do not count.

usage: function_length.py REPOSITORY_ROOT [MAX_LINES]
       function_length.py --self-test    (the checker on functions it makes)
"""
import os
import re
import sys

EXTENSIONS = (".cc", ".h", ".hpp", ".c")
FOLDERS = ("host", "model", "plugins", "sdk")
NOT_FUNCTIONS = re.compile(r"^\s*(namespace|class|struct|enum|union|extern|if|for|while|switch|catch|"
                           r"do|else|try|return|case|default)\b|=\s*$|=\s*\[")


def blank(text):
    """The text with comments, string and character literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name line, end line, signature) of every function body at namespace or class scope."""
    raw = open(path, encoding="utf-8", errors="replace").read()
    text = blank(raw)
    found, stack, start = [], [], 0  # stack: (kind, line of the name) per open brace
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            head = text[start:i]
            in_function = any(entry[0] == "function" for entry in stack)
            sig = " ".join(head.split())
            is_function = (not in_function and ")" in head and "(" in head
                           and not NOT_FUNCTIONS.search(sig) and not sig.startswith("#"))
            name_line = line - head.rstrip().count("\n") if is_function else line
            if is_function:
                # The signature's first line: back up over the lines of the head that are not blank.
                lines = head.split("\n")
                while len(lines) > 1 and not lines[0].strip():
                    lines.pop(0)
                name_line = line - (len(lines) - 1)
            stack.append(("function" if is_function else "block", name_line, sig))
            start = i + 1
        elif c == "}":
            if stack:
                kind, name_line, sig = stack.pop()
                if kind == "function":
                    found.append((name_line, line, sig))
            start = i + 1
        elif c == ";":
            start = i + 1
    return found, raw.split("\n")


def self_test():
    """A long function is found, with its line and length; a marked table, braces in comments,
    strings and raw strings, lambdas and class bodies are not functions of their own."""
    import tempfile
    body = "\n".join("  x += %d;" % i for i in range(79))
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "host"))
        with open(os.path.join(root, "host", "a.cc"), "w") as f:
            f.write("namespace n {\n"
                    "int shortOne(int x) {\n  return x; // }}}\n}\n"
                    "int longOne(int x) {\n" + body + "\n  return x;\n}\n"
                    "// A table: one option a line.\nint table(int x) {\n" + body + "\n" + body +
                    "\n  return x;\n}\n"
                    "struct S {\n  int m(int x) {\n    auto f = [](int y) { return y; };\n"
                    "    const char* s = \"{{{\";\n    const char* r = R\"d({)d\";\n"
                    "    return f(x);\n  }\n};\n"
                    "} // namespace n\n")
        found, _ = functions(os.path.join(root, "host", "a.cc"))
        lengths = {sig.split("(")[0].split()[-1]: last - first + 1 for first, last, sig in found}
        assert lengths == {"shortOne": 3, "longOne": 82, "table": 161, "m": 6}, lengths
        sys.argv = [sys.argv[0], root]
        assert main() == 1
    print("function_length.py: self-test passed")
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 80
    bad = []
    for folder in FOLDERS:
        for d, _, names in os.walk(os.path.join(root, folder)):
            for n in sorted(names):
                if not n.endswith(EXTENSIONS):
                    continue
                path = os.path.join(d, n)
                found, lines = functions(path)
                for first, last, sig in found:
                    length = last - first + 1
                    before = lines[first - 2].strip() if first >= 2 else ""
                    if length > limit and not before.startswith("// A table:"):
                        bad.append((length, os.path.relpath(path, root), first, sig[:90]))
    for length, path, first, sig in sorted(bad, reverse=True):
        print("%s:%d: %d lines (at most %d unless it is a table): %s" % (path, first, length, limit, sig))
    print("%d function(s) over %d lines" % (len(bad), limit))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
