#!/usr/bin/env python3
"""The device's part of QEMU's -dump-vmstate output, for
tests/runners/vmstate-check.sh.

  extract DUMP OUT     write the sections "vmschkmachine" and "rdma-session"
                       of DUMP (the whole -dump-vmstate output) to OUT; the
                       device's section holds every description it
                       references, nested
  same OLD NEW         exit 0 if the device's section is the same in both
  appended OLD NEW     the check scripts/vmstate-static-checker.py leaves
                       out: a field added after the last field of a
                       description, in NEW, must have a version_id above
                       that description's version_id in OLD, or NEW would
                       read bytes that OLD never sent (the checker stops at
                       the end of OLD's fields and reports nothing)
  mutate DESC OUT      DESC with the size of the first field of the first
                       description under the device (rdma-session/core)
                       doubled: a change the checker must report, to show
                       that it runs and reads these files
"""

import json
import sys
from typing import Dict, Iterator, List

SECTIONS = ("vmschkmachine", "rdma-session")


def load(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def descriptions(desc: dict, path: str = "") -> Iterator[tuple]:
    """Every description under desc (itself first), with where it is: the
    descriptions and fields that lead to it."""
    here = (path + " > " if path else "") + desc.get("name", "?")
    yield here, desc
    for field in desc.get("Fields", []):
        if "Description" in field:
            yield from descriptions(field["Description"],
                                    here + " [" + field["field"] + "]")
    for sub in desc.get("Subsections", []):
        yield from descriptions(sub, here + " (subsection)")


def extract(dump: str, out: str) -> int:
    d = load(dump)
    missing = [s for s in SECTIONS if s not in d]
    if missing:
        print("%s: no section %s" % (dump, ", ".join(missing)))
        return 1
    with open(out, "w", encoding="utf-8") as f:
        json.dump({s: d[s] for s in SECTIONS}, f, indent=2)
        f.write("\n")
    return 0


def same(old: str, new: str) -> int:
    a, b = load(old)["rdma-session"], load(new)["rdma-session"]
    if a == b:
        return 0
    print("the rdma-session section differs")
    return 1


def appended(old: str, new: str) -> int:
    olds: Dict[str, dict] = {}
    for where, desc in descriptions(load(old)["rdma-session"]["Description"]):
        olds.setdefault(where, desc)
    bad: List[str] = []
    for where, desc in descriptions(load(new)["rdma-session"]["Description"]):
        o = olds.get(where)
        if o is None:
            continue
        of, nf = o.get("Fields", []), desc.get("Fields", [])
        for field in nf[len(of):]:
            if field.get("version_id", 0) <= o["version_id"]:
                bad.append('Description "%s": field "%s" (version_id %d) '
                           'after the last field of the old description '
                           '(version_id %d)' % (where, field["field"],
                                                field.get("version_id", 0),
                                                o["version_id"]))
    for line in bad:
        print(line)
    return 1 if bad else 0


def mutate(desc: str, out: str) -> int:
    d = load(desc)
    for where, sub in descriptions(d["rdma-session"]["Description"]):
        fields = [f for f in sub.get("Fields", []) if "Description" not in f]
        if sub.get("name", "").startswith("rdma-session/") and fields:
            fields[0]["size"] *= 2
            print('Description "%s": field "%s" now %d bytes' % (
                where, fields[0]["field"], fields[0]["size"]))
            with open(out, "w", encoding="utf-8") as f:
                json.dump(d, f, indent=2)
            return 0
    print("no field to change")
    return 1


def main(argv: List[str]) -> int:
    cmds = {"extract": extract, "same": same, "appended": appended,
            "mutate": mutate}
    if len(argv) != 4 or argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    return cmds[argv[1]](argv[2], argv[3])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
