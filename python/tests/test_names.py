"""Tests of the devices file, attribute access and the PeakRDL adapter that
need no hub: the devices file against its Go twin's rules, Regs over node
records, and the callbacks driven by a stand-in of a PeakRDL-python model
over an in-memory device."""

import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import oetp  # noqa: E402
import oetp.peakrdl  # noqa: E402
from oetp import _devices  # noqa: E402

EXAMPLE = b"""# a board
[device.board1]
iface = "eth1"
mac = "02:0e:0c:00:00:02"
local_mac = "02:0e:0c:00:01:00"
timeout = "250ms"
address_table = "board1.xml"

[device."board-2"]
iface = "eth2"
mac = "02:0e:0c:00:00:03"
rmem_mac = "02:0e:0c:00:02:01"
"""


class DevicesFileTest(unittest.TestCase):
    def test_example(self):
        devs = _devices.parse("/d/devices.toml", EXAMPLE)
        b = devs["board1"]
        self.assertEqual((b.iface, b.mac, b.transport, b.timeout, b.address_table, b.line),
                         ("eth1", "02:0e:0c:00:00:02", "v1", 0.25, "/d/board1.xml", 2))
        # The role MACs of `oetp devices` for this seed and name (Go's
        # devices.DeriveMAC, the hub's derivation).
        self.assertEqual(b.local, {"rmem": "be:c1:9f:0e:a8:f0", "dma_write": "0e:c0:9f:0e:a8:ef", "dma_read": "26:c5:9f:0e:a8:f2"})
        b2 = devs["board-2"]
        self.assertEqual(b2.local["rmem"], "02:0e:0c:00:02:01")
        self.assertEqual(b2.line, 9)
        self.assertEqual(b2.timeout, 1.0)

    def test_errors(self):
        for doc, want in [
            (b"[device.a]\niface = \n", "d.toml:2: TOML:"),
            (b"[device.a]\niface = \"e\"\nmac = \"02:00:00:00:00:01\"\nmak = \"x\"\n", "d.toml:4: unknown key 'device.a.mak'"),
            (b"[device.a]\nmac = \"02:00:00:00:00:01\"\n", "d.toml:1: device 'a': iface is missing"),
            (b"[device.a]\niface = \"e\"\nmac = \"03:00:00:00:00:01\"\n", "d.toml:3: device 'a': mac 03:00:00:00:00:01 is not a unicast address"),
            (b"[device.a]\niface = \"e\"\nmac = \"02:00:00:00:00:01\"\n\ntransport = \"tcp\"\n", "d.toml:5: device 'a': transport = 'tcp' is not v1, reliable or auto"),
            (b"[device.a]\niface = \"e\"\nmac = \"02:00:00:00:00:01\"\ntimeout = \"1\"\n", "d.toml:4: device 'a': timeout = '1' is not a duration"),
            (b"[device.a]\niface = \"e\"\nmac = \"02:00:00:00:00:01\"\nrmem_mac = \"02:00:00:00:00:09\"\ndma_read_mac = \"02:00:00:00:00:09\"\n",
             "d.toml:5: device 'a': rmem_mac and dma_read_mac are both 02:00:00:00:00:09"),
        ]:
            with self.assertRaises(oetp.DevicesError) as cm:
                _devices.parse("d.toml", doc)
            self.assertIn(want, str(cm.exception))

    def test_load_checks(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "devices.toml")
            with open(p, "wb") as f:
                f.write(EXAMPLE)
            os.chmod(p, 0o600)
            self.assertEqual(sorted(oetp.load_devices(p)), ["board-2", "board1"])
            os.chmod(p, 0o666)
            with self.assertRaises(oetp.DevicesError) as cm:
                oetp.load_devices(p)
            self.assertIn("is writable by every user", str(cm.exception))
            with self.assertRaises(oetp.UsageError) as cm:
                os.chmod(p, 0o600)
                oetp.device_entry("nope", p)
            self.assertEqual(str(cm.exception), "no device 'nope' in %s: its devices are board-2, board1" % p)


class FakeNode:
    def __init__(self, mem, name, address, mask, permission):
        self.mem, self.name, self.address, self.mask, self.permission, self.words = mem, name, address, mask, permission, 1
        self.shift = (mask & -mask).bit_length() - 1

    def read(self):
        return (self.mem.get(self.address, 0) & self.mask) >> self.shift

    def write(self, v):
        w = self.mem.get(self.address, 0)
        self.mem[self.address] = (w & ~self.mask) | ((v << self.shift) & self.mask)


class RegsTest(unittest.TestCase):
    def setUp(self):
        self.mem = {0x100: 0xA1000051, 0x110: 0x11, 0x114: 0x22}
        m = self.mem
        self.regs = oetp.Regs.build([
            FakeNode(m, "blk.ctrl", 0x100, 0xFFFFFFFF, "rw"),
            FakeNode(m, "blk.ctrl.enable", 0x100, 0x1, "rw"),
            FakeNode(m, "blk.ctrl.mode", 0x100, 0xF0, "rw"),
            FakeNode(m, "blk.ctrl.version", 0x100, 0xFF000000, "r"),
            FakeNode(m, "blk.scratch[0]", 0x110, 0xFFFFFFFF, "rw"),
            FakeNode(m, "blk.scratch[1]", 0x114, 0xFFFFFFFF, "rw"),
            FakeNode(m, "blk.cmd.go", 0x120, 0x1, "w"),
        ])

    def test_attribute_access(self):
        r = self.regs.blk
        self.assertEqual(r.ctrl.read(), 0xA1000051)
        self.assertEqual(r.ctrl.mode.read(), 5)
        self.assertEqual(r.ctrl.version.read(), 0xA1)
        r.ctrl.mode.write(0xA)
        self.assertEqual(self.mem[0x100], 0xA10000A1)
        self.assertEqual(r.scratch[1].read(), 0x22)
        self.assertEqual([s.read() for s in r.scratch], [0x11, 0x22])
        self.assertEqual(len(r.scratch), 2)
        self.assertIn("mode", dir(r.ctrl))

    def test_refusals(self):
        r = self.regs.blk
        before = dict(self.mem)
        with self.assertRaisesRegex(oetp.UsageError, "node 'blk.ctrl.version' is read-only"):
            r.ctrl.version.write(1)
        with self.assertRaisesRegex(oetp.UsageError, "node 'blk.cmd.go' is write-only"):
            r.cmd.go.read()
        with self.assertRaisesRegex(oetp.UsageError, "does not fit node 'blk.ctrl.mode': it is 4 bits wide"):
            r.ctrl.mode.write(16)
        with self.assertRaisesRegex(oetp.UsageError, "blk is not a register or field"):
            r.read()
        with self.assertRaisesRegex(AttributeError, "blk.ctrl has no 'mod': its names are enable, mode, version"):
            r.ctrl.mod
        with self.assertRaisesRegex(IndexError, r"blk.scratch\[2\]: its elements are \[0..1\]"):
            r.scratch[2]
        self.assertEqual(self.mem, before)


class MemDevice:
    """An in-memory stand-in of an oetp Device: RMEM words with BitEnable."""

    def __init__(self):
        self.mem, self.ops = {}, []

    def read(self, addr):
        self.ops.append(("read", addr))
        return self.mem.get(addr, 0)

    def write(self, addr, value, mask=0xFFFFFFFF):
        self.ops.append(("write", addr, value, mask))
        self.mem[addr] = (self.mem.get(addr, 0) & ~mask) | (value & mask)


class StandInModel:
    """The shape of a PeakRDL-python register model: each register calls the
    callback set it was given with keyword arguments, as the generated code
    does (addr, width, accesswidth[, data])."""

    class Reg:
        def __init__(self, cbs, addr, width=32, accesswidth=32):
            self.cbs, self.addr, self.width, self.accesswidth = cbs, addr, width, accesswidth

        def read(self):
            return self.cbs.read_callback(addr=self.addr, width=self.width, accesswidth=self.accesswidth)

        def write(self, data):
            self.cbs.write_callback(addr=self.addr, width=self.width, accesswidth=self.accesswidth, data=data)

    def __init__(self, callbacks):
        self.ctrl = self.Reg(callbacks, 0x0)
        self.wide = self.Reg(callbacks, 0x8, width=64)
        self.byte2 = self.Reg(callbacks, 0x12, width=8, accesswidth=8)
        self.mem = callbacks


class PeakRDLAdapterTest(unittest.TestCase):
    def test_stand_in_model(self):
        dev = MemDevice()
        cbs = oetp.peakrdl.callbacks(dev, base=0x2000_0000)
        for name in ("read_callback", "write_callback", "read_block_callback", "write_block_callback"):
            self.assertTrue(callable(getattr(cbs, name)), name)
        model = StandInModel(cbs)
        model.ctrl.write(0xC0FFEE01)
        self.assertEqual(dev.mem[0x2000_0000], 0xC0FFEE01)
        self.assertEqual(model.ctrl.read(), 0xC0FFEE01)
        model.wide.write(0x1122334455667788)
        self.assertEqual((dev.mem[0x2000_0008], dev.mem[0x2000_000C]), (0x55667788, 0x11223344))
        self.assertEqual(model.wide.read(), 0x1122334455667788)
        dev.mem[0x2000_0010] = 0xAABBCCDD
        model.byte2.write(0x5A)   # one masked write of byte 2, the others untouched
        self.assertEqual(dev.ops[-1], ("write", 0x2000_0010, 0x5A << 16, 0xFF << 16))
        self.assertEqual(dev.mem[0x2000_0010], 0xAA5ACCDD)
        self.assertEqual(model.byte2.read(), 0x5A)
        cbs.write_block_callback(addr=0x20, width=32, accesswidth=32, data=[1, 2, 3])
        self.assertEqual(cbs.read_block_callback(addr=0x20, width=32, accesswidth=32, length=3), [1, 2, 3])
        with self.assertRaises(oetp.UsageError):
            model.byte2.write(0x100)
        with self.assertRaises(oetp.UsageError):
            cbs.read_callback(addr=0x1, width=32, accesswidth=32)


if __name__ == "__main__":
    unittest.main()
