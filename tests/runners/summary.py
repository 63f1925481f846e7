#!/usr/bin/python3
"""Summarise one `meson test` run of a suite from its JSON log.

Usage: tests/runners/summary.py TESTLOG.json SUITE SECONDS

Prints the failed test cases ("not ok" lines with their "#" diagnostics),
the notes the tests print ("# " lines at the start of a line), the
skipped ones (known exceptions) and, as the last line,
"SUITE: N passed, N failed (NOTE)".  Counts come from each test's TAP
output: "ok" passes, "not ok" fails, "ok # SKIP" counts neither; cases a
plan announced but no line reported fail, and a test that crashed, timed
out or exited non-zero without a failing case counts one failure.
Exits 1 if anything failed.
"""

import json
import re
import sys

TAP = re.compile(r"^(not )?ok\b(?:\s+\d+)?\s*-?\s*([^#]*)(#\s*(SKIP|TODO)\S*\s*(.*))?",
                 re.IGNORECASE)


def main():
    path, suite, secs = sys.argv[1], sys.argv[2], sys.argv[3]
    passed = failed = skipped = 0
    tests = 0
    lines = []
    try:
        records = [json.loads(l) for l in open(path) if l.strip()]
    except OSError:
        records = []
    for t in records:
        tests += 1
        p = f = s = 0
        plan = None
        diag = False
        for line in (t.get("stdout") or "").splitlines():
            m = TAP.match(line)
            if m:
                diag = False
                directive = (m.group(4) or "").upper()
                if directive == "SKIP" and not m.group(1):
                    s += 1
                    lines.append("skipped - %s: %s" % (m.group(2).strip(), m.group(5)))
                elif directive == "TODO":
                    s += 1
                    lines.append("%s (expected failure)" % line)
                elif m.group(1):
                    f += 1
                    diag = True
                    lines.append(line)
                else:
                    p += 1
            elif re.match(r"^1\.\.(\d+)", line):
                plan = int(line[3:].split()[0]) if line[3:].split() else 0
            elif line.startswith("#"):
                # a failure's diagnostics ("#   "), or a note ("# ")
                if diag or not line.startswith("#  "):
                    lines.append(line)
        seen = p + f + s
        if plan is not None and plan > seen:
            f += plan - seen
            lines.append("not ok - %s: %d of %d planned cases did not report"
                         % (t.get("name"), plan - seen, plan))
        if t.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL") and f == 0:
            f = 1
            lines.append("not ok - %s: %s (%s s; log %s)"
                         % (t.get("name"), t.get("result"),
                            round(t.get("duration") or 0), path))
            lines += ["#   " + l for l in (t.get("stderr") or "").splitlines()[-5:]]
        if seen == 0 and f == 0:
            f = 1
            lines.append("not ok - %s: no test case ran" % t.get("name"))
        passed += p
        failed += f
        skipped += s
    if tests == 0:
        failed += 1
        lines.append("not ok - %s: no test in the suite ran (see %s)" % (suite, path))
    for l in lines:
        print(l)
    note = "%d meson test%s, %s s" % (tests, "" if tests == 1 else "s", secs)
    if skipped:
        note += ", %d not counted" % skipped
    print("%s: %d passed, %d failed (%s)" % (suite, passed, failed, note))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
