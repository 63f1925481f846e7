"""Named checks of a table-driven VM suite: list them, run one, a feature
or any selection alone, and run a selection N times with each check's
pass rate.

A suite describes its work as units (a boot, or a feature within a boot)
and the names of the TAP cases each unit reports when it runs alone
(its catalog: {unit: [name, ...]}, names "/"-separated paths such as
"adapter-adapter/rc/rc-connect/vm1"; a name a boot reports whichever of
its units runs, such as its "launch-vms", is in each of them).  main()
does the rest:

    def run(s, units):            # the chosen units, in catalog order
        ...                       # s.report()/s.tap()/s.expect() as usual
    sys.exit(select.main("verbs", catalog(), run, sys.argv[1:], __doc__))

Usage of such a suite:
  SUITE.py --list            every check's name (in the order they run)
  SUITE.py NAME...           only the checks NAME selects, booting only
                             the units that report them
  SUITE.py --repeat N [NAME...]   N rounds; then "# repeat: NAME k/N" per
                             check and one line with every check below N/N

A NAME selects a check if it equals the check's name, or names a unit
(its tests: "/".join of a tuple unit's parts), or its components
are a run of the check's name's components ("rc" selects every
".../rc/..."; "adapter-adapter/rc" that pairing's rc checks;
"adapter-adapter/rc/rc-connect" the check on both VMs), each component a
shell-style pattern ("*/rc/*/vm2"); a leading "SUITE/" is ignored.  The
suite reports only the selected checks; a selected check the run did not
report fails ("not reported").  With --repeat, each round logs into its
own subdirectory (r1, r2, ...) of the suite's log directory.
"""

import fnmatch
import os
import sys
from typing import Callable, Dict, Hashable, List, Optional, Sequence

Catalog = Dict[Hashable, List[str]]


def _parts(name: str) -> List[str]:
    return [p for p in name.strip().split("/") if p]


class Selection:
    """The checks a command line's NAMEs select (all if none)."""

    def __init__(self, patterns: Sequence[str] = (), suite: str = "",
                 exact: Sequence[str] = ()):
        self.patterns = []
        for p in patterns:
            pc = _parts(p)
            if suite and len(pc) > 1 and pc[0] == suite:
                pc = pc[1:]
            self.patterns.append(pc)
        # a unit's names: only those checks ("launch-vms" of one unit is
        # not every unit's ".../launch-vms")
        self.exact = set(exact)

    def __bool__(self) -> bool:
        return bool(self.patterns or self.exact)

    @staticmethod
    def matches(pattern: List[str], name: str) -> bool:
        nc = _parts(name)
        n = len(pattern)
        return any(all(fnmatch.fnmatchcase(nc[i + j], pattern[j])
                       for j in range(n))
                   for i in range(len(nc) - n + 1))

    def wants(self, name: str) -> bool:
        """Whether the check name is selected."""
        return not self or name in self.exact or \
            any(self.matches(p, name) for p in self.patterns)

    def unmatched(self, names: Sequence[str]) -> List[str]:
        """The NAMEs that select none of names."""
        return ["/".join(p) for p in self.patterns
                if not any(self.matches(p, n) for n in names)]

    def units(self, catalog: Catalog) -> List[Hashable]:
        """The units to run for the selected checks, in catalog order:
        every unit whose own names (those of no other unit) are selected,
        then, for a selected name that several units report, the first of
        them if none is chosen yet."""
        owners: Dict[str, List[Hashable]] = {}
        for u, names in catalog.items():
            for n in names:
                owners.setdefault(n, []).append(u)
        chosen = set()
        for n, us in owners.items():
            if len(us) == 1 and self.wants(n):
                chosen.add(us[0])
        for n, us in owners.items():
            if len(us) > 1 and self.wants(n) and not chosen & set(us):
                chosen.add(us[0])
        return [u for u in catalog if u in chosen]


def names(catalog: Catalog,
          units: Optional[Sequence[Hashable]] = None) -> List[str]:
    """The distinct names of the catalog's units (or of units), in
    order."""
    out: Dict[str, None] = {}
    for u, ns in catalog.items():
        if units is None or u in units:
            for n in ns:
                out.setdefault(n)
    return list(out)


class Rates:
    """Each check's results over the rounds of a --repeat."""

    def __init__(self) -> None:
        self.runs: Dict[str, List[Optional[bool]]] = {}

    def add(self, name: str, ok: Optional[bool]) -> None:
        """One result: True, False, None (skipped)."""
        self.runs.setdefault(name, []).append(ok)

    def lines(self, suite: str, rounds: int) -> List[str]:
        """One line per check, "SUITE/NAME k/N" (k passed of N rounds; a
        skip is not a pass), then the summary of those below N/N."""
        out, low = [], []
        for name, rs in self.runs.items():
            k = sum(1 for r in rs if r)
            sk = sum(1 for r in rs if r is None)
            line = "%s/%s %d/%d" % (suite, name, k, rounds)
            if sk:
                line += " (%d skipped)" % sk
            out.append(line)
            if k < rounds:
                low.append("%s/%s %d/%d" % (suite, name, k, rounds))
        out.append("%d checks, %d below %d/%d%s" % (
            len(self.runs), len(low), rounds, rounds,
            (": " + ", ".join(low)) if low else ""))
        return out


def usage(suite: str, doc: str = "") -> str:
    return ("usage: %s [--list] [--repeat N] [NAME...]\n"
            "  (tests/guest/rstest/select.py; --list shows the NAMEs)%s" %
            (sys.argv[0] or suite, "\n\n" + doc.strip() if doc else ""))


def main(suite: str, catalog: Catalog,
         run: Callable[..., None], argv: List[str], doc: str = "",
         out=None) -> int:
    """A table-driven suite's command line (see the module's doc)."""
    # pylint: disable=import-outside-toplevel
    from .suite import Suite
    out = out or sys.stdout
    argv = list(argv)
    rounds = 1
    listing = False
    pats = []
    while argv:
        a = argv.pop(0)
        if a == "--list":
            listing = True
        elif a == "--repeat" and argv and argv[0].isdigit() and \
                int(argv[0]) > 0:
            rounds = int(argv.pop(0))
        elif a.startswith("--repeat=") and a[9:].isdigit() and int(a[9:]):
            rounds = int(a[9:])
        elif a in ("-h", "--help"):
            print(usage(suite, doc), file=out)
            return 0
        elif a.startswith("-"):
            print(usage(suite), file=sys.stderr)
            return 2
        else:
            pats.append(a)
    # a unit's own name ("held", "adapter-adapter/rc") selects its tests
    keys = {"/".join(map(str, u)) if isinstance(u, tuple) else str(u): u
            for u in catalog}
    exact = [x for p in pats if p.strip("/") in keys
             for x in catalog[keys[p.strip("/")]]]
    pats = [p for p in pats if p.strip("/") not in keys]
    sel = Selection(pats, suite, exact)
    every = names(catalog)
    bad = sel.unmatched(every)
    if bad:
        print("%s: no check named %s (see --list)" % (suite, ", ".join(bad)),
              file=sys.stderr)
        return 2
    if listing:
        try:
            for n in every:
                if sel.wants(n):
                    print(n, file=out)
            out.flush()
        except BrokenPipeError:     # (--list | head)
            sys.stderr.close()
        return 0
    units = sel.units(catalog)
    wanted = [n for n in names(catalog, units) if sel.wants(n)]
    s = Suite(suite, out, select=sel)
    rates = Rates() if rounds > 1 else None
    top = s.dir
    for i in range(rounds):
        if rates is not None:
            s.dir = os.path.join(top, "r%d" % (i + 1))
            os.makedirs(s.dir, exist_ok=True)
            s.note("repeat: round %d of %d (logs in %s)" % (i + 1, rounds,
                                                             s.dir))
        s.begin_round(rates)
        run(s, units)
        for n in wanted:
            if n not in s.seen:
                s.report(False, n, "not reported (the run did not get "
                         "to it: see the logs in %s)" % s.dir)
    s.dir = top
    if rates is not None:
        for ln in rates.lines(suite, rounds):
            s.note("repeat: " + ln)
    return s.end()
