#!/usr/bin/env python3
"""Reads the JUnit report of a ctest run (ctest --output-junit FILE) and says what ran.

    test_report.py FILE           one line per skipped test, `  Name: reason`
    test_report.py --counts FILE  `passed failed skipped`, the three numbers tools/test.sh sums

ctest lists the tests it skipped but not why; the reason is in each test's output, which the
report keeps: a GoogleTest case prints `file:line: Skipped`, the GTEST_SKIP message, then
`[  SKIPPED ]`; a script run by add_test prints a line starting `SKIP:` before it exits with its
SKIP_RETURN_CODE. A test ctest did not run for another reason (disabled, a missing fixture) is
counted as skipped, with ctest's own word for it.
"""
import re
import sys
import xml.etree.ElementTree as ElementTree

GTEST_SKIPPED = re.compile(r"^.*: Skipped$")
GTEST_END = re.compile(r"^\[  SKIPPED \]")


def skip_reason(output: str, fallback: str) -> str:
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if GTEST_SKIPPED.match(line):
            message = []
            for rest in lines[i + 1:]:
                if GTEST_END.match(rest):
                    break
                if rest.strip():
                    message.append(rest.strip())
            return " ".join(message) or line.rsplit(": Skipped", 1)[0] + " (no message)"
    for line in lines:
        if line.startswith("SKIP:"):
            return line[len("SKIP:"):].strip()
    return fallback or "(no reason in the test's output)"


def read(path: str):
    """Yields (name, status, reason) per test; status is passed, failed or skipped."""
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        name = case.get("name", "?")
        skipped = case.find("skipped")
        if case.find("failure") is not None or case.get("status") == "fail":
            yield name, "failed", ""
        elif skipped is not None or case.get("status") in ("notrun", "disabled"):
            out = case.findtext("system-out") or ""
            fallback = skipped.get("message", "") if skipped is not None else case.get("status")
            yield name, "skipped", skip_reason(out, fallback)
        else:
            yield name, "passed", ""


def main(argv) -> int:
    counts = argv[1:2] == ["--counts"]
    paths = argv[2:] if counts else argv[1:]
    if len(paths) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        tests = list(read(paths[0]))
    except (OSError, ElementTree.ParseError) as error:
        print(f"test_report.py: cannot read the ctest JUnit report {paths[0]}: {error}",
              file=sys.stderr)
        return 1
    if counts:
        print(*(sum(1 for _, s, _ in tests if s == status)
                for status in ("passed", "failed", "skipped")))
    else:
        for name, status, reason in sorted(tests):
            if status == "skipped":
                print(f"  {name}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
