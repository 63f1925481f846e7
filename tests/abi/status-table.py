#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-or-later OR BSD-2-Clause)
"""The user guide's status table against the tests and the ABI header, as
TAP.

docs/system/devices/rdma-session.rst has, after the comment
".. status-table", a simple table of what works: Feature, ABI (the ABI
minor version that introduced it, "-" for what the guest does not see),
Capability (its RS_CAP_ bit, or "-") and Tests, a ";"-separated list of
``...`` items, each naming a test that shows the feature:

  ``verbs FEATURE``              a FEATURES entry of tests/guest/verbs.py
                                 (or its single-VM run odp-limits)
  ``qtest AREA`` / ``qtest AREA/NAME``
                                 an area of tests/meson.build's qtest_areas,
                                 and the qos-test path AREA/NAME registered
                                 in tests/qtest/rdma-session/
  ``tests/guest/F.py CLASS.METHOD``
                                 a unittest method of CLASS (own or
                                 inherited) in tests/guest/F*.py
  ``SUITE``                      a suite of scripts/run-tests.sh

One TAP test per row: its tests exist, its ABI version is not newer than
the header's, and its capability bit exists in the header and is listed
under that minor version in the header's version comment ("Minor N: ...").
Then: the table's newest ABI version is the header's, and every "device
ABI X.Y" the guide states is the header's version.

Usage: status-table.py SOURCE_ROOT
"""

import ast
import os
import re
import sys

from rsttable import tables

GUIDE = 'docs/system/devices/rdma-session.rst'
HEADER = 'include/hw/rdma-session/rdma-session-abi.h'


def status_table(lines):
    """(line number, {column: text}) of each row of the table after
    '.. status-table'."""
    try:
        i = next(n for n, l in enumerate(lines)
                 if l.strip() == '.. status-table')
    except StopIteration:
        raise SystemExit('%s: no ".. status-table" comment' % GUIDE)
    found = next((t for t in tables(lines) if t[0] > i), None)
    if found is None:
        raise SystemExit('%s: no table after ".. status-table"' % GUIDE)
    _, header, rows = found
    return [(ln, dict(zip(header, cells))) for ln, cells in rows]


class Repo:
    def __init__(self, root):
        self.root = root
        rd = lambda p: open(os.path.join(root, p)).read()
        self.header = rd(HEADER)
        self.major = int(re.search(r'#define RS_ABI_VERSION_MAJOR\s+(\d+)',
                                   self.header).group(1))
        self.minor = int(re.search(r'#define RS_ABI_VERSION_MINOR\s+(\d+)',
                                   self.header).group(1))
        # The header's version comment: "Minor N: ..." up to the next one.
        comment = re.search(r'/\*((?:(?!\*/).)*Minor 1:(?:(?!\*/).)*)\*/',
                            self.header, re.S).group(1)
        self.minor_text = {}
        for m in re.finditer(r'Minor (\d+):(.*?)(?=Minor \d+:|$)', comment,
                             re.S):
            self.minor_text[int(m.group(1))] = m.group(2)
        self.caps = set(re.findall(r'#define (RS_CAP_\w+)', self.header))
        # verbs.py's FEATURES names (and its single-VM run).
        verbs = rd('tests/guest/verbs.py')
        block = verbs[verbs.index('\nFEATURES'):]
        block = block[:block.index('\n]\n')]
        self.verbs = set(re.findall(r'^    \("([\w-]+)",', block, re.M))
        self.verbs.add('odp-limits')
        # qtest areas and the qos-test paths the area files register.
        self.areas = set(re.findall(r"^  '([\w-]+)': '",
                                    rd('tests/meson.build'), re.M))
        qdir = os.path.join(root, 'tests/qtest/rdma-session')
        self.qtests = set()
        for f in os.listdir(qdir):
            if f.endswith('.c'):
                self.qtests |= set(re.findall(r'"([\w-]+/[\w-]+)"',
                                              rd(os.path.join(
                                                  'tests/qtest/rdma-session',
                                                  f))))
        # The suites of scripts/run-tests.sh.
        rt = rd('scripts/run-tests.sh')
        m = re.search(r'^all=\((.*?)\)', rt, re.M | re.S)
        self.suites = set(m.group(1).split())

    def classes(self, script):
        """{class: (bases, methods)} of tests/guest/NAME*.py."""
        d = os.path.join(self.root, os.path.dirname(script))
        stem = os.path.basename(script)[:-3]
        out = {}
        for f in sorted(os.listdir(d)):
            if f.startswith(stem) and f.endswith('.py'):
                tree = ast.parse(open(os.path.join(d, f)).read())
                for node in tree.body:
                    if isinstance(node, ast.ClassDef):
                        bases = [b.id if isinstance(b, ast.Name) else
                                 getattr(b, 'attr', '') for b in node.bases]
                        meths = {n.name for n in node.body
                                 if isinstance(n, ast.FunctionDef)}
                        out[node.name] = (bases, meths)
        return out

    def has_method(self, script, cls, meth):
        classes = self.classes(script)
        todo, seen = [cls], set()
        while todo:
            c = todo.pop()
            if c in seen or c not in classes:
                continue
            seen.add(c)
            bases, meths = classes[c]
            if meth in meths:
                return True
            todo += bases
        return False

    def test_problem(self, item):
        """None if the test item exists, else why not."""
        words = item.split()
        if words[0] == 'verbs' and len(words) == 2:
            return None if words[1] in self.verbs else \
                'no feature %r in tests/guest/verbs.py FEATURES' % words[1]
        if words[0] == 'qtest' and len(words) == 2:
            area = words[1].split('/')[0]
            if area not in self.areas:
                return 'no qtest area %r in tests/meson.build' % area
            if '/' in words[1] and words[1] not in self.qtests:
                return 'no qtest %r in tests/qtest/rdma-session/' % words[1]
            return None
        if words[0].startswith('tests/guest/') and len(words) == 2:
            if not os.path.exists(os.path.join(self.root, words[0])):
                return 'no file %s' % words[0]
            cls, _, meth = words[1].partition('.')
            return None if self.has_method(words[0], cls, meth) else \
                'no test %s in %s' % (words[1], words[0])
        if len(words) == 1:
            return None if words[0] in self.suites else \
                'no suite %r in scripts/run-tests.sh' % words[0]
        return 'cannot read the test %r' % item


def version(text):
    m = re.fullmatch(r'(\d+)\.(\d+)', text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def main(argv):
    if len(argv) != 1:
        raise SystemExit(__doc__)
    repo = Repo(argv[0])
    text = open(os.path.join(argv[0], GUIDE)).read()
    rows = status_table(text.split('\n'))
    tests = failures = 0

    def result(ok, what, problems=()):
        nonlocal tests, failures
        tests += 1
        failures += not ok
        print('%s %d - %s' % ('ok' if ok else 'not ok', tests, what))
        for p in problems:
            print('# ' + p)

    newest = None
    for ln, row in rows:
        problems = []
        feature = row.get('Feature', '').replace('``', '')
        abi = row.get('ABI', '').strip()
        ver = version(abi)
        if ver:
            newest = max(newest or ver, ver)
            if ver > (repo.major, repo.minor):
                problems.append('ABI %s is newer than the header\'s %d.%d'
                                % (abi, repo.major, repo.minor))
        elif abi not in ('-', '—'):
            problems.append('ABI %r is not MAJOR.MINOR or -' % abi)
        for cap in re.findall(r'RS_CAP_\w+', row.get('Capability', '')):
            if cap not in repo.caps:
                problems.append('%s is not in the header' % cap)
            elif ver and ver[1] > 0:
                said = repo.minor_text.get(ver[1], '')
                if not re.search(r'\b%s\b' % cap, said):
                    problems.append("the header's version comment does not "
                                    'list %s under minor %d' % (cap, ver[1]))
        items = re.findall(r'``([^`]+)``', row.get('Tests', ''))
        if not items:
            problems.append('no test named')
        for item in items:
            p = repo.test_problem(item)
            if p:
                problems.append(p)
        result(not problems, '%s:%d: %s (ABI %s): %s' % (
            GUIDE, ln, feature, abi, '; '.join(items)), problems)

    want = (repo.major, repo.minor)
    result(newest == want, "%s: the status table's newest ABI version is "
           "the header's %d.%d" % (GUIDE, want[0], want[1]),
           [] if newest == want else ['the table has %s' % (newest,)])
    stated = [(text.count('\n', 0, m.start()) + 1, version(m.group(1)))
              for m in re.finditer(r'device ABI (\d+\.\d+)', text)]
    bad = ['line %d: device ABI %d.%d' % (ln, v[0], v[1])
           for ln, v in stated if v != want]
    result(stated and not bad, "%s: every 'device ABI X.Y' it states is the "
           "header's %d.%d (%d)" % (GUIDE, want[0], want[1], len(stated)),
           bad or ([] if stated else ['none found']))
    print('1..%d' % tests)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
