"""The guests' verdicts: lines "CHECK <name> ok|fail <detail>", which the
launcher prints prefixed "[vmI] ", and their report as TAP."""

import re
import sys
from typing import Dict, Iterable, List, Optional, Tuple

LINE_RE = re.compile(r"^\[vm([0-9]+)\] CHECK (\S+) (.*)$")


class Check:
    """One guest's verdict on one check."""

    def __init__(self, vm: int, name: str, line: str):
        self.vm = vm
        self.name = name
        self.line = line            # as the launcher printed it
        rest = line.split(None, 4)  # [vmI] CHECK name result detail
        self.result = rest[3] if len(rest) > 3 else ""
        self.detail = rest[4] if len(rest) > 4 else ""

    @property
    def ok(self) -> bool:
        return self.result == "ok"


def parse(lines: Iterable[str]) -> Dict[Tuple[int, str], Check]:
    """The first CHECK line of each (VM, name) in the launcher output."""
    found: Dict[Tuple[int, str], Check] = {}
    for ln in lines:
        ln = ln.rstrip("\n")
        m = LINE_RE.match(ln)
        if m:
            key = (int(m.group(1)), m.group(2))
            found.setdefault(key, Check(key[0], key[1], ln))
    return found


class Tally:
    """TAP lines and their count."""

    def __init__(self, out=sys.stdout):
        self.passed = 0
        self.failed = 0
        self.out = out

    def report(self, ok: bool, name: str, detail: str = "") -> None:
        if ok:
            self.passed += 1
            print("ok - %s" % name, file=self.out)
        else:
            self.failed += 1
            print("not ok - %s: %s" % (name, detail), file=self.out)

    def expect(self, found: Dict[Tuple[int, str], Check],
               wanted: Iterable[Tuple[int, str]], where: str = "",
               prefix: str = "") -> None:
        """Each wanted (VM, name) must have passed; a missing one fails
        (where: the output to see).  The test is "PREFIXNAME/vmVM"."""
        missing = "no result (see %s)" % where if where else "no result"
        for vm, name in wanted:
            c: Optional[Check] = found.get((vm, name))
            self.report(c is not None and c.ok,
                        "%s%s/vm%d" % (prefix, name, vm),
                        c.line if c is not None else missing)


def parse_wanted(specs: Iterable[str]) -> List[Tuple[int, str]]:
    """"VM:NAME" -> (VM, NAME)"""
    out = []
    for s in specs:
        vm, _, name = s.partition(":")
        out.append((int(vm), name))
    return out

