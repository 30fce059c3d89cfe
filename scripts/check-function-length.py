#!/usr/bin/env python3
"""No function in Sources runs over 80 lines (from its `func` or `init` line to its closing
brace). A function listed in KNOWN (none now: the codec's reshaping split the last) may
shrink but not grow, and one that is no longer long must leave the list."""
import glob
import re
import sys

LIMIT = 80
KNOWN: dict = {}
DECLARATION = re.compile(
    r"\s*(?:@\w+(?:\([^)]*\))?\s+)*"
    r"(?:(?:public|package|private|fileprivate|internal|static|override|mutating|nonisolated|final|class|convenience|required)\s+)*"
    r"(?:func\s+([^\s(<]+)|(init)[?!]?)\s*[(<]"
)


def long_functions():
    for path in sorted(glob.glob("Sources/**/*.swift", recursive=True)):
        lines = open(path, encoding="utf-8").read().split("\n")
        index = 0
        while index < len(lines):
            match = DECLARATION.match(lines[index])
            if not match:
                index += 1
                continue
            depth, opened, end = 0, False, index
            while end < len(lines):
                code = lines[end].split("//")[0]
                for character in code:
                    if character == "{":
                        depth, opened = depth + 1, True
                    elif character == "}":
                        depth -= 1
                if opened and depth <= 0:
                    break
                end += 1
            length = end - index + 1
            if length > LIMIT:
                yield path, match.group(1) or match.group(2), index + 1, length
            index += 1


problems = []
seen = set()
for path, name, line, length in long_functions():
    key = (path, name)
    seen.add(key)
    known = KNOWN.get(key)
    if known is None:
        problems.append(f"{path}:{line}: {name} runs {length} lines (at most {LIMIT}): split it")
    elif length > known:
        problems.append(f"{path}:{line}: {name} grew to {length} lines (was {known}, at most {LIMIT}): split it")
for key in sorted(set(KNOWN) - seen):
    problems.append(f"{key[0]}: {key[1]} is no longer over {LIMIT} lines: take it off KNOWN in scripts/check-function-length.py")
if problems:
    print("\n".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"functions: none over {LIMIT} lines" + (f" beyond the {len(KNOWN)} known" if KNOWN else ""))
