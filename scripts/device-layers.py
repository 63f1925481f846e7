#!/usr/bin/env python3
"""The device model's file structure, from its object files.

For every hw/rdma-session/*.c of a QEMU build, the functions and data it
defines and those of the other device files it uses (nm): the references
between files, the ones that point "upward" in the layers below (a file
using one of a layer above its own), the files' dependency cycles and,
with --src, each file's length.

Layers, bottom to top (a file may use its own layer and those below):
  wire     the RoCEv2 packet format
  core     DMA, events, registers, the feature table, the core's migration
  objects  verbs objects and features: PD/CQ/AH/SRQ, QP, keys, sessions, ...
  engine   the transport: requester, responder, completer, net, bundles,
           the dynamically connected transport (DC)
  admin    the admin queue and its command dispatch
  glue     PCI/QOM, QMP

The layers below reach the ones above through what those set in RSCore at
realize, not by name: the engine's services (RSEngineOps: the requester's
kick, an SQ doorbell, ODP's resume and failure, DC's QP state changes),
the LAN doorbell handler and the admin queue's bottom half (a feature).

The cycles are those of the function references.

Usage: scripts/device-layers.py [--src DIR] [--list] BUILD-DIR | OBJ...
  BUILD-DIR: a QEMU build directory (scripts/build-qemu.sh's
  $RS_BUILD/qemu); the device's objects are found under it.
  --src DIR: the device's sources (hw/rdma-session), for line counts.
  --list: every upward reference, and the cycles' edges.
"""

import argparse
import glob
import os
import re
import subprocess
import sys

LAYERS = ['wire', 'core', 'objects', 'engine', 'admin', 'glue']

# File stem (without rdma-session-) -> layer; a file not named is 'objects'.
FILE_LAYER = {
    'wire': 'wire',
    'core': 'core',
    'migration': 'core',
    'req': 'engine',
    'resp': 'engine',
    'comp': 'engine',
    'engine': 'engine',
    'net': 'engine',
    'bundle': 'engine',
    # DC is a transport: a DCI is an RC requester whose target changes, its
    # CONNECT/REPLY/DISCONNECT packets are built, timed out and retried as
    # the requester's (tuple, RNR wait, ACK timeout, xmit).
    'dc': 'engine',
    # ECN's CNPs are built and sent as ACKs are; DCQCN paces the requester.
    'ecn': 'engine',
    'dcqcn': 'engine',
    # Doorbell records feed the requester and responder their producers;
    # the local fabric is a link the engine sends frames on.
    'dbrec': 'engine',
    'fabric': 'engine',
    'admin': 'admin',
    'pci': 'glue',
    'qmp': 'glue',
    'qmp-stub': 'glue',
}


def stem(path):
    m = re.search(r'rdma-session-([\w-]+)\.c', os.path.basename(path))
    return m.group(1) if m else None


def layer(name):
    return LAYERS.index(FILE_LAYER.get(name, 'objects'))


def find_objects(build):
    objs = glob.glob(os.path.join(build, '**', '*hw_rdma-session_rdma-session-*.c.o'),
                     recursive=True)
    # one build of each file (the main build, not the fuzzer's)
    seen = {}
    for o in sorted(objs):
        seen.setdefault(stem(o), o)
    return sorted(seen.values())


def symbols(obj):
    out = subprocess.run(['nm', obj], capture_output=True, text=True,
                         check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == 'U':
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in 'TDRB':
            defined.add((parts[2], 'func' if parts[1] == 'T' else 'data'))
    return defined, undefined


def sccs(nodes, edges):
    """Tarjan: the strongly connected components with more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--src', help='hw/rdma-session, for line counts')
    ap.add_argument('--list', action='store_true',
                    help='list upward references and cycle edges')
    ap.add_argument('inputs', nargs='+')
    a = ap.parse_args()
    objs = a.inputs
    if len(objs) == 1 and os.path.isdir(objs[0]):
        objs = find_objects(objs[0])
    if not objs:
        sys.exit('no rdma-session objects found')
    files = {}
    for o in objs:
        if stem(o) is None:
            continue
        files[stem(o)] = symbols(o)
    owner, kind = {}, {}
    for f, (d, _) in files.items():
        for s, k in d:
            owner[s] = f
            kind[s] = k
    # Function references; data (the feature table's entries, VMState
    # descriptions a parent names) is counted apart: a table that names
    # its entries is the layering, not a call against it.
    refs, data = [], []     # (from, to, symbol)
    for f, (_, u) in files.items():
        for s in sorted(u):
            if s in owner and owner[s] != f:
                (refs if kind[s] == 'func' else data).append((f, owner[s], s))
    up = [r for r in refs if layer(r[1]) > layer(r[0])]
    edges = {}
    for f, t, _ in refs:
        edges.setdefault(f, set()).add(t)
    cycles = sccs(files, edges)

    if a.src:
        total = 0
        print('# lines per file')
        for f in sorted(files):
            path = os.path.join(a.src, 'rdma-session-%s.c' % f)
            n = sum(1 for _ in open(path)) if os.path.exists(path) else 0
            total += n
            print('%6d  rdma-session-%s.c  (%s)' % (n, f, FILE_LAYER.get(f, 'objects')))
        print('%6d  total' % total)
    pairs = {(f, t) for f, t, _ in refs}
    print('cross-file function references: %d (functions used from another '
          'file), between %d file pairs' % (len(refs), len(pairs)))
    print('upward function references: %d (a file calling into a layer '
          'above its own)' % len(up))
    print('cross-file data references: %d (%d upward)' %
          (len(data), sum(1 for r in data if layer(r[1]) > layer(r[0]))))
    for c in cycles:
        print('cycle: %d files: %s' % (len(c), ' '.join(c)))
    if not cycles:
        print('cycles: none')
    if a.list:
        for f, t, s in up:
            print('  up  %-10s -> %-10s %s' % (f, t, s))
        for c in cycles:
            for f in c:
                for t in sorted(edges.get(f, ())):
                    if t in c:
                        n = sum(1 for r in refs if r[0] == f and r[1] == t)
                        print('  cycle edge %s -> %s (%d)' % (f, t, n))


if __name__ == '__main__':
    main()
