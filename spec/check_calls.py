#!/usr/bin/env python3
"""check_calls.py — `make lint`: finds test checks that cannot fail in part.

The suites' `check DESCRIPTION CMD...` (spec/e2e/lib.sh) runs one command.
Written `check "d" [ a ] && [ b ]`, the shell runs `check "d" [ a ]`, then
`[ b ]` on its own: b is never reported. Such a condition must be one
command (`eval '[ a ] && [ b ]'`, `bash -c ...`). This reads every suite,
joins continued lines, and names each `check` call with && or || outside
quotes and command substitutions. Exit 1 when there is one.

Usage: check_calls.py [FILE...]   (default: spec/e2e/*.sh)
"""
import glob
import sys


def logical_lines(path):
    """(first line number, text) of each line, backslash continuations and
    lines ending in && or || joined."""
    buf, start = "", 0
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not buf:
                start = i
            line = line.rstrip("\n")
            if line.endswith("\\"):
                buf += line[:-1] + " "
                continue
            buf += line
            if buf.rstrip().endswith(("&&", "||")):
                buf += " "
                continue
            yield start, buf
            buf = ""
    if buf:
        yield start, buf


def bare_operator(s):
    """True when s has && or || outside quotes and $(...)."""
    quote, depth, i = None, 0, 0
    while i < len(s):
        c = s[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif s.startswith("$(", i):
            depth += 1
            i += 2
            continue
        elif c == ")" and depth:
            depth -= 1
        elif depth == 0 and s.startswith(("&&", "||"), i):
            return True
        elif depth == 0 and c == "#" and (i == 0 or s[i - 1] in " \t"):
            return False
        i += 1
    return False


def main(paths):
    bad = 0
    for path in paths:
        for n, text in logical_lines(path):
            t = text.strip()
            if t.startswith("check ") and bare_operator(t):
                print("%s:%d: check with && or || outside its command (only the first part is "
                      "checked): %s" % (path, n, t[:120]))
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or sorted(glob.glob("spec/e2e/*.sh"))))
