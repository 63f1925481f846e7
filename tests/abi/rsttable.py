"""reStructuredText simple tables, as the ABI documentation checks read
them (tests/abi/spec-tables.py, tests/abi/status-table.py)."""

import re

BORDER = re.compile(r'^( *)=+( +=+)+ *$')


def columns(border):
    """Start columns of a simple table's border line."""
    return [m.start() for m in re.finditer(r'=+', border)]


def cell(line, starts, i):
    end = starts[i + 1] if i + 1 < len(starts) else len(line)
    return line[starts[i]:end].strip() if len(line) > starts[i] else ''


def tables(lines):
    """Yield (line number of the header row, header cells, rows); each row is
    (line number, [cell text joined over its continuation lines])."""
    i = 0
    while i < len(lines):
        if (BORDER.match(lines[i]) and i + 2 < len(lines)
                and BORDER.match(lines[i + 2])
                and columns(lines[i]) == columns(lines[i + 2])):
            starts = columns(lines[i])
            header = [cell(lines[i + 1], starts, k) for k in range(len(starts))]
            rows = []
            k = i + 3
            while k < len(lines) and not (BORDER.match(lines[k])
                                          and columns(lines[k]) == starts):
                line = lines[k]
                if line.strip():
                    cells = [cell(line, starts, c) for c in range(len(starts))]
                    if cells[0] or not rows:
                        rows.append((k + 1, cells))
                    else:
                        prev = rows[-1][1]
                        for c, text in enumerate(cells):
                            if text:
                                prev[c] = (prev[c] + ' ' + text).strip()
                k += 1
            yield i, header, rows
            i = k + 1
        else:
            i += 1
