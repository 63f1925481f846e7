"""The Debian guest: the image scripts/distro-image.sh builds, with the
adapter's driver and provider installed in it the way a user installs
them, and named tests that run in such guests.

Installation (image()): scripts/build-dkms-deb.sh makes the packages
rdma-session-dkms and rdma-session-provider; one boot of the base image
(writable, 2 vCPUs) with the packages' directory shared (virtio-9p) runs
"apt-get install ./*.deb" (DKMS builds the module in the guest against
its headers), checks that the module loads and the device is
PORT_ACTIVE, and powers off.  The installed disk is cached next to the
base image, keyed by the hash of the inputs (the driver's and provider's
sources, the ABI header, the packaging and rdma-core build scripts, this
file); the installation's console log is kept there (install.log, with
the time DKMS took).  Every later boot is a snapshot of that disk, where
udev loads the driver at boot from the PCI ID.

Named tests (PairTest): a unittest.TestCase whose class boots a pairing
of Debian guests once (setUpClass, the launcher's Launch) and whose test
methods run shell scripts in them over the control port ("run", VM.run),
checking what the scripts print in Python.  Each test method can be run
alone, as QEMU's tests/functional are:

    tests/guest/stacks.py AdapterPair.test_nfs_rdma

A class may name the test methods a short variant runs (SHORT): the
test command runs only those of that class and reports the others as
skipped (counted neither as passed nor as failed); main(full_env=VAR)
runs them all when VAR is 1, and a test named on the command line always
runs.

main() prints TAP (rstest.tap).  Logs: $RS_BUILD/test-logs/NAME.XXXXXX/
(NAME.last): per class the VMs' run directory, per test each script and
its output.
"""

import contextlib
import fcntl
import glob
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from typing import Callable, Dict, List, Optional, Tuple

from .suite import BUILD, TOP, Suite
from .vm import SOFT_ROCE, guest_env

CACHE = os.environ.get("RS_CACHE",
                       os.path.join(os.path.expanduser("~"), ".cache",
                                    "rdma-session"))

# What the installing boot runs, in the shared directory of the packages.
INSTALL = r'''set -e -o pipefail
t0=$(date +%s)
apt-get install -y --no-install-recommends ./rdma-session-dkms_*.deb ./rdma-session-provider_*.deb 2>&1 |
    grep -v "readelf: Warning: Section '.comment'"
echo "rs-distro: apt-get install took $(( $(date +%s) - t0 )) s"
dkms status rdma-session 2>&1 | grep -v "readelf: Warning"
modprobe rdma_session
for _ in $(seq 120); do
    [ -n "$(ls /sys/class/infiniband)" ] && break
    sleep 0.5
done
# (the interface came with the driver, after rs-net.service)
ifc=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
ip link set "$ifc" up
for _ in $(seq 60); do
    ibv_devinfo | grep -q PORT_ACTIVE && break
    sleep 0.5
done
rdma link show
ibv_devinfo | grep -E 'hca_id|state:'
ibv_devinfo | grep -q PORT_ACTIVE
apt-get clean
'''


class DistroError(Exception):
    """The image could not be built or the packages not installed."""


def inputs_key(base_dir: str) -> str:
    """The hash of what the installed image is made of."""
    h = hashlib.sha1(os.path.basename(base_dir).encode())
    paths = (glob.glob(os.path.join(TOP, "guest-driver", "kernel", "*")) +
             glob.glob(os.path.join(TOP, "guest-driver", "provider", "**"),
                       recursive=True) +
             glob.glob(os.path.join(TOP, "include", "hw", "rdma-session",
                                    "*.h")) +
             [os.path.join(TOP, "scripts", n) for n in
              ("build-dkms-deb.sh", "build-rdma-core.sh")])
    h.update(INSTALL.encode())
    for p in sorted(set(paths)):
        if os.path.isfile(p):
            h.update(os.path.relpath(p, TOP).encode() + b"\0")
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()[:16]


def image(qemu: str, log: Callable[[str], None],
          quiet: bool = False) -> Dict[str, str]:
    """The Debian guest with the packages installed: RS_KERNEL, RS_INITRD,
    RS_DISK (boot it with snapshot=on), RS_KVER, RS_INSTALL_LOG."""
    # pylint: disable=import-outside-toplevel
    from .launcher import image_script
    base = image_script("distro-image.sh")
    disk = base.get("RS_DISTRO_DISK", "")
    if not os.path.isfile(disk):
        raise DistroError("scripts/distro-image.sh printed no disk")
    bdir = os.path.dirname(disk)
    key = inputs_key(bdir)
    out = os.path.join(bdir, "driver-" + key)
    img = {"RS_KERNEL": base["RS_DISTRO_KERNEL"],
           "RS_INITRD": base["RS_DISTRO_INITRD"],
           "RS_KVER": base.get("RS_DISTRO_KVER", ""),
           "RS_DISK": os.path.join(out, "rootfs.img"),
           "RS_INSTALL_LOG": os.path.join(out, "install.log")}
    # one installation at a time (suites or launchers started together)
    with open(os.path.join(bdir, ".install.lock"), "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        if os.path.isfile(img["RS_DISK"]):
            log("the driver's packages are installed in %s" % out)
            return img
        install(qemu, base, out, log, quiet)
    return img


def install(qemu: str, base: Dict[str, str], out: str,
            log: Callable[[str], None], quiet: bool) -> None:
    """Build the packages, install them in a copy of the base disk (one
    boot), keep the disk as out/rootfs.img."""
    # pylint: disable=import-outside-toplevel
    from . import launcher
    bdir = os.path.dirname(out)
    work = tempfile.mkdtemp(prefix=".install.", dir=bdir)
    try:
        debs = os.path.join(work, "debs")
        os.makedirs(debs)
        env = dict(os.environ, RS_BUILD=BUILD)
        stage = os.path.join(BUILD, "rdma-core-stage", "usr", "lib",
                             "x86_64-linux-gnu", "librsession.so.1")
        if not os.path.exists(stage):
            log("building rdma-core with the provider "
                "(scripts/build-rdma-core.sh)")
            if subprocess.call([os.path.join(TOP, "scripts",
                                             "build-rdma-core.sh")],
                               stdout=sys.stderr, env=env) != 0:
                raise DistroError("scripts/build-rdma-core.sh failed")
        log("building the packages (scripts/build-dkms-deb.sh)")
        if subprocess.call([os.path.join(TOP, "scripts", "build-dkms-deb.sh"),
                            debs], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL if quiet else None,
                           env=env) != 0:
            raise DistroError("scripts/build-dkms-deb.sh failed")
        disk = os.path.join(work, "rootfs.img")
        subprocess.check_call(["cp", "--sparse=always",
                               base["RS_DISTRO_DISK"], disk])
        o = launcher.parse(["-n", "1", "--distro", "--no-build",
                            "--share", debs, "--timeout", "1500",
                            "--boot-timeout", "400", "--cmd", INSTALL])
        assert o is not None
        o.disk_writable = True
        img = {"RS_KERNEL": base["RS_DISTRO_KERNEL"],
               "RS_INITRD": base["RS_DISTRO_INITRD"],
               "RS_KVER": base.get("RS_DISTRO_KVER", ""), "RS_DISK": disk}
        log("installing the packages in the Debian guest (apt-get install, "
            "DKMS builds the module; minutes under TCG)")
        t0 = time.time()
        rdir = os.path.join(work, "vms")
        run = launcher.Launch(o, qemu, img, rdir)
        try:
            # (the launcher's report to stderr: stdout may be TAP)
            with contextlib.redirect_stdout(sys.stderr):
                rc = run.main(t0)
        finally:
            run.teardown()
        shutil.copy(os.path.join(rdir, "vm1", "serial.log"),
                    os.path.join(work, "install.log"))
        if rc != 0:
            raise DistroError("installing the packages failed (%s)" %
                              os.path.join(work, "install.log"))
        log("installed in %.0f s" % (time.time() - t0))
        done = os.path.join(work, "out")
        os.makedirs(done)
        os.replace(disk, os.path.join(done, "rootfs.img"))
        os.replace(os.path.join(work, "install.log"),
                   os.path.join(done, "install.log"))
        # the newest installed disks only (each is about 2 GB; a running
        # VM's snapshot keeps its file open)
        olds = sorted(glob.glob(os.path.join(bdir, "driver-*")),
                      key=os.path.getmtime, reverse=True)
        for old in olds[1:]:
            shutil.rmtree(old, ignore_errors=True)
        os.replace(done, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --- named tests in Debian guests ---------------------------------------

# every pairing's Launch: main() tears down what is left (a timeout's
# SIGTERM, Ctrl-C)
LAUNCHES: list = []

class PairTest(unittest.TestCase):
    """Debian guests booted once for the class's test methods.

    ARGS: the launcher's arguments of the pairing (--distro is added),
    e.g. ["-n", "2", "--soft-roce-vm", "2"].  SHARE: a host directory
    shared into the guests (/mnt/host), or None.  SHORT: the test methods
    the short variant runs (see main()), or None for all."""

    ARGS: List[str] = ["-n", "2"]
    SHARE: Optional[str] = None
    # the test methods the short variant runs (None: every one)
    SHORT: Optional[Tuple[str, ...]] = None
    suite: Optional[Suite] = None
    launch = None
    boot_error = ""

    @classmethod
    def logdir(cls) -> str:
        if PairTest.suite is None:
            PairTest.suite = Suite(os.environ.get("RS_SUITE_NAME", "distro"),
                                   out=open(os.devnull, "w"))
        return PairTest.suite.dir

    @classmethod
    def setUpClass(cls) -> None:
        # pylint: disable=import-outside-toplevel
        from . import launcher
        o = launcher.parse(["--distro", "--no-build", "--boot-timeout",
                            "400"] + cls.ARGS +
                           (["--share", cls.SHARE] if cls.SHARE else []))
        assert o is not None
        cls.opts = o
        qemu, img = launcher.prepare(o)
        rdir = os.path.join(cls.logdir(), cls.__name__)
        cls.launch = launcher.Launch(o, qemu, img, rdir)
        LAUNCHES.append(cls.launch)
        try:
            cls.boot(o)
        except BaseException:
            cls.launch.teardown()
            cls.launch = None
            raise

    @classmethod
    def boot(cls, o) -> None:
        t0 = time.time()
        if not cls.launch.launch() or not cls.launch.wait_ready(t0):
            raise RuntimeError("the guests did not boot (see %s)" %
                               cls.launch.run)
        cls.boot_seconds = time.time() - t0
        cls.vms = cls.launch.vms
        cls.env = {i: guest_env(i, o.n, cls.launch.segment, True)
                   for i in cls.vms}
        for i, vm in cls.vms.items():
            if cls.launch.soft(i):
                rc, out = vm.run(cls.env[i] + SOFT_ROCE +
                                 "rdma link show rxe0/1", 60)
                if rc != 0:
                    raise RuntimeError("vm%d: soft-RoCE: %s" % (i, out))

    @classmethod
    def tearDownClass(cls) -> None:
        if cls.launch is None:
            return
        for vm in cls.vms.values():
            try:
                os.write(os.open(vm.ctl_in, os.O_RDWR | os.O_NONBLOCK),
                         b"poweroff\n")
            except OSError:
                pass
        for vm in cls.vms.values():
            vm.settle(60)
        cls.launch.teardown()

    # --- running scripts ---------------------------------------------------

    def log(self, name: str, text: str) -> None:
        path = os.path.join(self.logdir(), self.__class__.__name__,
                            "%s.log" % self._testMethodName)
        with open(path, "a") as f:
            f.write("==> %s (%s)\n%s\n" % (name, time.strftime("%T"), text))

    def run_logged(self, i: int, script: str,
                   timeout: float) -> Tuple[int, str]:
        """script in VM i, with both in the test's log; (-1, why) if it
        did not answer."""
        self.log("vm%d script" % i, script)
        try:
            rc, out = self.vms[i].run(self.env[i] + script, timeout)
        except (TimeoutError, RuntimeError) as e:
            rc, out = -1, str(e)
        self.log("vm%d exit status %d" % (i, rc), out)
        return rc, out

    def run_on(self, i: int, script: str, timeout: float = 120,
               check: bool = True) -> Tuple[int, str]:
        """script in VM i (with RS_* and rs_barrier); (status, output).
        With check, a non-zero status fails the test."""
        rc, out = self.run_logged(i, script, timeout)
        if rc < 0:
            self.fail(out)
        if check and rc != 0:
            self.fail("vm%d: exit status %d:\n%s" % (i, rc, out[-3000:]))
        return rc, out

    def sh(self, i: int, script: str, timeout: float = 120) -> str:
        """script in VM i, which must succeed; its output."""
        return self.run_on(i, script, timeout)[1]

    def sh_all(self, scripts: Dict[int, str],
               timeout: float = 120) -> Dict[int, str]:
        """The scripts in their VMs at the same time; each must succeed;
        their outputs."""
        res: Dict[int, Tuple[int, str]] = {}

        def one(i: int, s: str) -> None:
            res[i] = self.run_logged(i, s, timeout)

        ts = [threading.Thread(target=one, args=(i, s))
              for i, s in scripts.items()]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        bad = ["vm%d: exit status %d:\n%s" % (i, rc, out[-2000:])
               for i, (rc, out) in sorted(res.items()) if rc != 0]
        if bad:
            self.fail("\n".join(bad))
        return {i: out for i, (_, out) in res.items()}

    def soft(self, i: int) -> bool:
        return self.launch.soft(i)

    def note(self, text: str) -> None:
        """A figure: a TAP comment line "# CLASS.test: TEXT" (and in the
        test's log)."""
        line = "%s.%s: %s" % (self.__class__.__name__, self._testMethodName,
                              text)
        print("# " + line, flush=True)
        self.log("note", line)


def short_variant(tests: unittest.TestSuite,
                  full_env: str) -> Tuple[unittest.TestSuite, List[str]]:
    """tests with the methods that their class's SHORT leaves out marked
    skipped (reported as "ok N - NAME # SKIP ...", which counts neither
    as passed nor as failed); and what was left out, per class."""
    out = unittest.TestSuite()
    left: Dict[str, List[str]] = {}
    for t in _flatten(tests):
        short = getattr(t, "SHORT", None)
        name = getattr(t, "_testMethodName", "")
        if short is not None and name not in short:
            left.setdefault(t.__class__.__name__, []).append(name)
            setattr(t, name, unittest.skip(
                "short variant (%s=1 runs it)" % full_env)(getattr(t, name)))
        out.addTest(t)
    return out, ["%s: %s" % (c, " ".join(m)) for c, m in left.items()]


def main(full_env: Optional[str] = None) -> int:
    """Run the calling module's tests (or those named on the command line,
    CLASS or CLASS.test_method) and print TAP.  Without names and unless
    the environment variable full_env is 1, only the methods a class's
    SHORT names run (the others are reported as skipped).  --list [NAME...]
    prints the selected tests' names, with "# SKIP" on those the short
    variant leaves out, and runs nothing."""
    # pylint: disable=import-outside-toplevel
    from .tap import TapResult
    if sys.argv[1:] == ["--prepare"]:
        from . import launcher
        o = launcher.parse(["--distro", "--no-build"])
        assert o is not None
        try:
            _, img = launcher.prepare(o)
        except launcher.SetupError as e:
            print("error: %s" % e, file=sys.stderr)
            return 1
        for k, v in sorted(img.items()):
            print("%s=%s" % (k, v))
        return 0
    mod = sys.modules["__main__"]
    names = sys.argv[1:]
    listing = names[:1] == ["--list"]
    if listing:
        names = names[1:]
    loader = unittest.defaultTestLoader
    left: List[str] = []
    if names:
        tests = loader.loadTestsFromNames(names, mod)
    else:
        # (classes with BY_HAND set run only when named)
        tests = unittest.TestSuite(
            loader.loadTestsFromTestCase(c) for c in vars(mod).values()
            if isinstance(c, type) and issubclass(c, unittest.TestCase) and
            not getattr(c, "BY_HAND", False))
        if full_env and os.environ.get(full_env) != "1":
            tests, left = short_variant(tests, full_env)
    suite = os.environ.get("RS_SUITE_NAME", "distro")
    if left:
        print("# %s: short variant, left out (%s=1 runs every test): %s" %
              (suite, full_env, "; ".join(left)), flush=True)
    if listing:
        for t in _flatten(tests):
            name = getattr(t, "_testMethodName", "")
            skip = getattr(getattr(t, name, None), "__unittest_skip__", False)
            print("%s%s" % (t.id().replace("__main__.", ""),
                            " # SKIP short variant" if skip else ""))
        return 0
    result = TapResult()

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    try:
        tests.run(result)
    finally:
        for la in LAUNCHES:
            la.teardown()
    return result.plan()


def _flatten(tests) -> List[unittest.TestCase]:
    if isinstance(tests, unittest.TestSuite):
        return [t for sub in tests for t in _flatten(sub)]
    return [tests]
