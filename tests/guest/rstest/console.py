"""What a guest's /init (scripts/guest-image.sh) says on its console.

  rs-init: ready                           the guest waits for its command
  rs-init: running the launcher's command  the command starts
  rs-init: command exit status N           it ended with status N

The Debian guest (scripts/distro-image.sh) also has root's shell on its
console: its prompt ("root@vm1:~# ", after bash's bracketed-paste switch)
can come in front of any of those lines, depending on when the login
finished, and is left out.
"""

import re
from typing import List, Optional

READY = "rs-init: ready"
RUNNING = "rs-init: running the launcher's command"
STATUS_RE = re.compile(r"^rs-init: command exit status ([0-9]*)$")
# a shell's prompt at the start of a line, and bash's bracketed-paste
# switches anywhere
PROMPT_RE = re.compile(r"^[a-z_][a-z0-9_-]*@[A-Za-z0-9_.-]+:[^#$\s]*[#$] ",
                       re.M)
PASTE_RE = re.compile(r"\x1b\[\?2004[hl]")
# the lines that describe a ready guest's network interface and RDMA devices
SUMMARY_RE = re.compile(
    r"^rs-init: (eth|en|no network|[a-z0-9]+ \()|^rs-init: RDMA")


def read(path: str) -> str:
    """A serial log's text, carriage returns and shell prompts left
    out."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return ""
    text = PASTE_RE.sub("", data.decode("utf-8", "replace").replace("\r", ""))
    return PROMPT_RE.sub("", text)


def lines(path: str) -> List[str]:
    return read(path).split("\n")


def readies(text: str) -> int:
    """How many times the guest became ready (it boots again after a
    reset)."""
    return sum(1 for ln in text.split("\n") if ln.startswith(READY))


def ready_summary(text: str) -> str:
    """"eth0 (rdma_session) MAC ADDR ;RDMA devices: rsess0 ;" """
    return "".join(ln[len("rs-init: "):] + ";"
                   for ln in text.split("\n") if SUMMARY_RE.match(ln))


def exit_status(text: str) -> Optional[str]:
    """The last command's exit status, or None while none ended."""
    found = None
    for ln in text.split("\n"):
        m = STATUS_RE.match(ln)
        if m:
            found = m.group(1)
    return found


def command_output(text: str) -> List[str]:
    """The commands' output: every line from a "running" line to the
    next exit status line (a reset guest's reboot included), without the
    first "running" line and the status lines."""
    out: List[str] = []
    inside = False
    for ln in text.split("\n"):
        if not inside:
            if ln == RUNNING:
                inside = True
                out.append(ln)
            continue
        out.append(ln)
        if STATUS_RE.match(ln):
            inside = False
    if text.endswith("\n") and inside and out and out[-1] == "":
        out.pop()           # (the empty string after the last newline)
    out = out[1:]
    return [ln for ln in out if not STATUS_RE.match(ln)]
