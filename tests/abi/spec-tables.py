#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-or-later OR BSD-2-Clause)
"""The specification's tables against the ABI header, as TAP.

docs/specs/rdma-session.rst documents the hardware ABI in reStructuredText
simple tables: the register map and the doorbell offsets, the BARs, the
layout of every structure (Offset, Size, Field; "Cmd", the byte of the
64-byte admin command), and the values of constants (capability bits,
status codes, event types, opcodes).  This program reads those tables,
writes a C program that prints, for each row, what the compiler makes of
the header (offsetof(), sizeof, the macro's or enumerator's value), builds
it with the C compiler it is given and compares.  Nothing is copied from
the header by hand: a table row is right when the compiler agrees with it.

Each row carries a #line directive, so a name the header does not have is
reported at its line of the .rst.  Structure tables must also cover their
structure: every byte from 0 to sizeof in some row (unions may overlap),
and the size a "``struct rs_x`` (N bytes)" sentence gives must be sizeof.

The structure a table describes is the last "struct rs_..." named in the
text just before it; a comment ".. abi-table: struct rs_x" (or
".. abi-table: skip") right before the table says it explicitly.  Tables
that name no header symbol (wire headers, state transitions) are not
checked.  One TAP test per checked table, plus the ABI version the
specification says it describes.

Usage: spec-tables.py [--cc CC [ARGS...] --] -I INCLUDE_DIR SPEC.rst
"""

import os
import re
import subprocess
import sys
import tempfile

from rsttable import BORDER, tables

SYMBOL = re.compile(r'``([A-Za-z_][A-Za-z0-9_]*)``')


def context(lines, top):
    """The structure a table at line index top describes, and the size the
    text gives it: an explicit '.. abi-table:' comment, else the last
    'struct rs_x' in the text since the previous table or heading."""
    text = []
    for j in range(top - 1, max(-1, top - 14), -1):
        line = lines[j]
        m = re.match(r'\s*\.\. abi-table: *(.*)$', line)
        if m:
            what = m.group(1).strip()
            return (None, None) if what == 'skip' else (what, None)
        if BORDER.match(line) or re.match(r'^[-=~^]{3,}\s*$', line):
            break
        text.insert(0, line)
    joined = ' '.join(text).replace('`', '')
    found = list(re.finditer(r'struct\s+(rs_\w+)(\s*\((\d+) bytes)?', joined))
    if not found:
        return None, None
    m = found[-1]
    return 'struct ' + m.group(1), int(m.group(3)) if m.group(3) else None


def number(text):
    """An integer cell: 0x1c, 28, 1 << 5, bit 16; else None."""
    text = text.strip().strip('`')
    m = re.fullmatch(r'(0x[0-9a-fA-F]+|\d+)', text)
    if m:
        return int(m.group(1), 0)
    m = re.fullmatch(r'(\d+)\s*<<\s*(\d+)', text)
    if m:
        return int(m.group(1)) << int(m.group(2))
    return None


def col(header, *names):
    for n in names:
        for i, h in enumerate(header):
            if h.split(' ')[0] == n:
                return i
    return None


class Check:
    """One table: the rows to compare, as C expressions with what the
    table says they are."""

    def __init__(self, name, line):
        self.name = name
        self.line = line
        self.items = []     # (rst line, C expression, expected, label)
        self.problems = []
        self.struct = None
        self.size = None
        self.ranges = []    # (rst line, offset, size) of a structure's rows

    def expect(self, line, expr, want, label):
        self.items.append((line, expr, want, label))


def plan(lines):
    checks = []
    for top, header, rows in tables(lines):
        h0 = header[0].split(' ')[0]
        off, size, field = (col(header, 'Offset', 'Off'), col(header, 'Size'),
                            col(header, 'Field'))
        cmd = col(header, 'Cmd')
        value = col(header, 'Value')
        name = col(header, 'Name', 'Status', 'Bit', 'Type', 'Flag')
        if off is not None and field is not None:
            struct, nbytes = context(lines, top)
            if not struct:
                continue
            c = Check('%s (%d rows)' % (struct, len(rows)), top + 2)
            c.struct, c.size = struct, nbytes
            c.expect(top + 2, 'sizeof(%s)' % struct, nbytes, 'sizeof')
            for ln, cells in rows:
                m = SYMBOL.search(cells[field])
                o = number(cells[off])
                if not m or o is None:
                    c.problems.append('line %d: no field name or offset in '
                                      '"%s"' % (ln, ' | '.join(cells)))
                    continue
                f = m.group(1)
                c.expect(ln, 'offsetof(%s, %s)' % (struct, f), o,
                         'offset of %s' % f)
                s = number(cells[size]) if size is not None else None
                if size is not None:
                    c.expect(ln, 'sizeof(((%s *)0)->%s)' % (struct, f), s,
                             'size of %s' % f)
                    if s is not None:
                        c.ranges.append((ln, o, s))
                if cmd is not None:
                    cm = number(cells[cmd])
                    c.expect(ln, 'offsetof(struct rs_admin_cmd, raw) + '
                             'offsetof(%s, %s)' % (struct, f), cm,
                             'command byte of %s' % f)
            checks.append(c)
        elif off is not None and name is not None and h0 in ('Offset',):
            # The register map (A_RS_* of registerfields.h) or the doorbell
            # offsets (RS_DB_* macros).
            regs = col(header, 'Access') is not None
            c = Check('%s offsets (%d rows)' % ('register' if regs else
                                               'doorbell', len(rows)), top + 2)
            for ln, cells in rows:
                m = SYMBOL.search(cells[name])
                o = number(cells[off])
                if not m or o is None:
                    c.problems.append('line %d: no name or offset' % ln)
                    continue
                sym = ('A_' if regs else '') + m.group(1)
                c.expect(ln, sym, o, sym)
            checks.append(c)
        elif h0 == 'BAR':
            c = Check('BAR numbers (%d rows)' % len(rows), top + 2)
            for ln, cells in rows:
                bar = number(cells[0])
                for s in re.findall(r'``(RS_BAR_\w+)``', ' '.join(cells)):
                    c.expect(ln, s, bar, s)
                for s in re.findall(r'``(RS_REGS_SIZE)``', ' '.join(cells)):
                    m = re.search(r'``(0x[0-9a-f]+)``', ' '.join(cells))
                    if m:
                        c.expect(ln, s, int(m.group(1), 16), s)
            if c.items:
                checks.append(c)
        elif name is not None and value is not None:
            # Constants: the name column may give a prefix, as in
            # "Type (``RS_EV_``)".
            prefix = ''
            m = re.search(r'``(RS_\w*_)``', header[name])
            if m:
                prefix = m.group(1)
            c = Check('values of %s (%d rows)' % (
                prefix or header[name].split(' ')[0], len(rows)), top + 2)
            for ln, cells in rows:
                m = SYMBOL.search(cells[name])
                v = number(cells[value])
                if not m or v is None:
                    continue
                sym = m.group(1)
                if prefix and not sym.startswith('RS_'):
                    sym = prefix + sym
                if not sym.startswith('RS_'):
                    continue
                c.expect(ln, sym, v, sym)
            if c.items:
                checks.append(c)
    return checks


def compile_and_run(cc, include, spec, items):
    """Values of the C expressions of items (index -> value); names the
    header lacks are dropped and reported as (rst line, message)."""
    errors = {}
    todo = list(range(len(items)))
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, 'spec-tables.c')
        exe = os.path.join(tmp, 'spec-tables')
        for _ in range(20):
            out = ['#include "hw/rdma-session/rdma-session-abi.h"',
                   '#include <stddef.h>', '#include <stdio.h>',
                   'int main(void)', '{']
            for i in todo:
                ln, expr = items[i][0], items[i][1]
                out.append('#line %d "%s"' % (ln, spec))
                out.append('    printf("%d %%llu\\n", (unsigned long long)(%s));'
                           % (i, expr))
            out += ['    return 0;', '}', '']
            with open(src, 'w') as f:
                f.write('\n'.join(out))
            r = subprocess.run(cc + ['-I', include, '-o', exe, src],
                               capture_output=True, text=True)
            if r.returncode == 0:
                break
            bad = set()
            for m in re.finditer(r'^%s:(\d+):\d*:? *error: (.*)$'
                                 % re.escape(spec), r.stderr, re.M):
                bad.add(int(m.group(1)))
                errors.setdefault(int(m.group(1)), m.group(2))
            left = [i for i in todo if items[i][0] not in bad]
            if not bad or left == todo:
                sys.stderr.write(r.stderr)
                raise SystemExit('spec-tables: the generated program does '
                                 'not compile')
            todo = left
        else:
            raise SystemExit('spec-tables: too many rounds of errors')
        r = subprocess.run([exe], capture_output=True, text=True, check=True)
    values = {}
    for line in r.stdout.splitlines():
        i, v = line.split()
        values[int(i)] = int(v)
    return values, errors


def abi_version(include):
    text = open(os.path.join(include, 'hw/rdma-session/rdma-session-abi.h')).read()
    major = re.search(r'#define RS_ABI_VERSION_MAJOR\s+(\d+)', text).group(1)
    minor = re.search(r'#define RS_ABI_VERSION_MINOR\s+(\d+)', text).group(1)
    return int(major), int(minor)


def main(argv):
    cc = ['cc']
    if argv[:1] == ['--cc']:
        end = argv.index('--')
        cc, argv = argv[1:end], argv[end + 1:]
    if len(argv) != 3 or argv[0] != '-I':
        raise SystemExit(__doc__)
    include, spec = argv[1], argv[2]
    lines = open(spec).read().split('\n')
    # Named in the TAP output relative to the source tree (include/'s parent).
    shown = os.path.relpath(os.path.realpath(spec), os.path.dirname(
        os.path.realpath(include)))
    checks = plan(lines)
    items = []
    owner = []
    for n, c in enumerate(checks):
        for it in c.items:
            if it[2] is None and it[3] == 'sizeof':
                continue
            items.append(it)
            owner.append(n)
    values, errors = compile_and_run(cc, include, spec, items)

    tests = failures = 0

    def result(ok, what, problems=()):
        nonlocal tests, failures
        tests += 1
        failures += not ok
        print('%s %d - %s' % ('ok' if ok else 'not ok', tests, what))
        for p in problems:
            print('# ' + p)

    major, minor = abi_version(include)
    m = re.search(r'describes ABI version (\d+)\.(\d+)', '\n'.join(lines))
    said = (int(m.group(1)), int(m.group(2))) if m else None
    result(said == (major, minor),
           '%s:%d: the ABI version the specification describes is the '
           "header's %d.%d" % (shown, 1, major, minor),
           [] if said == (major, minor) else
           ['the specification says %s' % (said,)])

    for n, c in enumerate(checks):
        problems = list(c.problems)
        for i, it in enumerate(items):
            if owner[i] != n:
                continue
            ln, expr, want, label = it
            if ln in errors and i not in values:
                problems.append('line %d: %s: not in the header (%s)'
                                % (ln, label, errors[ln]))
            elif want is None:
                problems.append('line %d: %s: the table gives no number '
                                '(the header: %d)' % (ln, label, values[i]))
            elif values.get(i) != want:
                problems.append('line %d: %s: the table says %d (0x%x), the '
                                'header %d (0x%x)' % (ln, label, want, want,
                                                      values[i], values[i]))
        if c.struct:
            sz = None
            for i, it in enumerate(items):
                if owner[i] == n and it[1] == 'sizeof(%s)' % c.struct:
                    sz = values.get(i)
            if sz is None:
                sz = next((values[i] for i, it in enumerate(items)
                           if owner[i] == n and it[3] == 'sizeof'
                           and i in values), None)
            if sz is not None and c.ranges:
                covered = bytearray(sz)
                for ln, o, s in c.ranges:
                    if o + s > sz:
                        problems.append('line %d: bytes %d-%d are past the '
                                        'end (%d bytes)' % (ln, o, o + s - 1, sz))
                    for b in range(o, min(o + s, sz)):
                        covered[b] = 1
                holes = [b for b in range(sz) if not covered[b]]
                if holes:
                    problems.append('bytes %d-%d of %s (%d bytes) are in no '
                                    'row' % (holes[0], holes[-1], c.struct, sz))
        result(not problems, '%s:%d: %s' % (shown, c.line, c.name), problems)

    print('1..%d' % tests)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
