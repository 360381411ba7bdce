"""Run by cmd/oetp's TestDevicesFileOverVeth against a real hub serving the
devices file $OETP_DEVICES (oetp hub --devices) and a board (oetp serve) with
the IP-XACT table of that test: the devices file opens the device by name,
attribute access reads and writes its registers and fields, and a stand-in
of a PeakRDL-python model drives the hub through oetp.peakrdl's callbacks.
The Go test then checks the board's memory byte for byte."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import oetp  # noqa: E402
import oetp.peakrdl  # noqa: E402
from test_names import StandInModel  # noqa: E402


def check(cond, what):
    if not cond:
        print("names_check: FAILED: %s" % what)
        sys.exit(1)


dev = oetp.open_device("board1")
check(dev.via == "hub" and dev.hub_path == os.environ["OETP_HUB"] and dev.hub_pid is None, "the route is the running hub: %r %r" % (dev.via, dev.hub_path))
check(dev.local == dev.entry.local, "the hub's local MACs %r are the devices file's %r" % (dev.local, dev.entry.local))
r = dev.regs.blk
check(r.ctrl.mode.read() == 0xA, "blk.ctrl.mode reads 0xa")
check(r.ctrl.version.read() == 0xA1, "blk.ctrl.version reads 0xa1")
check(r.scratch[1].read() == 0x5A5A5A5A, "blk.scratch[1] reads 0x5a5a5a5a")
r.scratch[0].write(0x12345678)
r.ctrl.enable.write(0)
try:
    r.ctrl.version.write(1)
    check(False, "a write to the read-only blk.ctrl.version is refused")
except oetp.UsageError:
    pass
model = StandInModel(oetp.peakrdl.callbacks(dev, base=0x100))
check(model.ctrl.read() == 0xA10000A0, "the model's ctrl (0x100) reads 0xa10000a0, got 0x%x" % model.ctrl.read())
model.byte2 = StandInModel.Reg(model.mem, 0x19, width=8, accesswidth=8)
model.byte2.write(0x77)
check(model.byte2.read() == 0x77, "the model's byte at 0x119 reads 0x77")
dev.close()
print("names_check: ok")
