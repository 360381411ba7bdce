"""Run by cmd/oetp's TestDevicesFileOverVeth with no hub running: the
devices file opens the board by name through a private hub this process
starts (oetp hub for that one device), attribute access writes a field, a
register and an array element, and closing the device (or dropping it)
stops the hub and removes its directory. The Go test then checks the
board's memory byte for byte."""

import gc
import os
import stat
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import oetp  # noqa: E402


def check(cond, what):
    if not cond:
        print("private_check: FAILED: %s" % what)
        sys.exit(1)


def gone(pid, d):
    try:
        os.kill(pid, 0)
        return False
    except ProcessLookupError:
        return not os.path.exists(d)


dev = oetp.open_device("board1")
check(dev.via == "private", "the route is a private hub, not %r" % dev.via)
pid, d = dev.hub_pid, os.path.dirname(dev.hub_path)
st = os.lstat(d)
check(isinstance(pid, int) and pid > 0, "the private hub's pid is known: %r" % pid)
check(stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid(), "the hub's directory %s is 0700 and mine: %o" % (d, st.st_mode))
check(dev.local == dev.entry.local, "the private hub's local MACs %r are the devices file's %r" % (dev.local, dev.entry.local))
r = dev.regs.blk
check(r.ctrl.mode.read() == 0xA, "blk.ctrl.mode reads 0xa")
r.ctrl.enable.write(0)                       # a field: one masked write
check(r.ctrl.read() == 0xA10000A0, "blk.ctrl reads 0xa10000a0 after enable = 0")
r.cmd.write(0xC0DE0001)                      # a (write-only) register
r.scratch[1].write(0x600DF00D)               # an array element
check(r.scratch[1].read() == 0x600DF00D, "blk.scratch[1] reads back 0x600df00d")
check(r.scratch[0].read() == 0x11111111, "blk.scratch[0] reads 0x11111111")
try:
    r.ctrl.version.write(1)
    check(False, "a write to the read-only blk.ctrl.version is refused")
except oetp.UsageError:
    pass
dev.close()
check(gone(pid, d), "after close() the private hub (pid %d) and %s are gone" % (pid, d))
dev.close()  # a second close is harmless

# Dropped without close(): the garbage collector stops the hub.
dev = oetp.open_device("board1")
pid, d = dev.hub_pid, os.path.dirname(dev.hub_path)
check(dev.regs.blk.scratch[1].read() == 0x600DF00D, "a second private hub reads blk.scratch[1]")
del dev
gc.collect()
check(gone(pid, d), "after the device is collected the private hub (pid %d) and %s are gone" % (pid, d))
print("private_check: ok")
