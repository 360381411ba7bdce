"""Tests of the Python client against a real hub and a real device.

They need a running hub: OETP_HUB (its socket) and OETP_TEST_DEVICE (the
device's name), set by the Go test that starts both (cmd/oetp
hub_net_test.go). The device serves registers at 0..64 KiB, RAM at
0x100000..0x200000 and a SLVERR range at 0x200000; OETP_TEST_TABLE=1 says
its address table is tests/fixtures' table. Without OETP_HUB the tests skip.
"""

import json
import os
import random
import struct
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import oetp  # noqa: E402

HUB = os.environ.get("OETP_HUB")
DEVICE = os.environ.get("OETP_TEST_DEVICE", "board1")


@unittest.skipUnless(HUB, "OETP_HUB is not set: run through go test ./cmd/oetp -run TestHub")
class HubTest(unittest.TestCase):
    def setUp(self):
        self.hub = oetp.connect()
        self.dev = self.hub.device(DEVICE)

    def tearDown(self):
        self.hub.close()

    def test_read_write_mask(self):
        d = self.dev
        d.write(0x100, 0xC0FFEE01)
        self.assertEqual(d.read(0x100), 0xC0FFEE01)
        d.write(0x100, 0x0000AB00, mask=0x0000FF00)
        self.assertEqual(d.read(0x100), 0xC0FFAB01)
        d.write(0x100, 0, mask=0)
        self.assertEqual(d.read(0x100), 0xC0FFAB01)

    def test_blocks(self):
        d = self.dev
        data = bytes(random.Random(5).getrandbits(8) for _ in range(50000 + 2))
        d.write_block(0x100000, data)
        self.assertEqual(d.read_block(0x100000, len(data)), data)
        d.write_block(0x100000, bytearray(b"\x01\x02\x03\x04"))
        self.assertEqual(d.read(0x100000), 0x04030201)
        # A block of 1 MiB or more is streamed by the hub into one DMA write.
        big = os.urandom(3 << 20)
        d.write_block(0x800000, big)
        self.assertEqual(d.read_block(0x800000, len(big)), big)

    def test_op_errors(self):
        d = self.dev
        with self.assertRaises(oetp.OpError) as cm:
            d.read(0x200000)
        self.assertEqual(cm.exception.code, 12)
        self.assertEqual(cm.exception.name, "REMOTE_AXI_RD_SLVERR")
        self.assertFalse(cm.exception.maybe_executed)
        with self.assertRaises(oetp.OpError) as cm:
            d.read(0x102)  # not word aligned: refused before anything is sent
        self.assertEqual((cm.exception.code, cm.exception.name), (1, "LOCAL_INVALID"))
        with self.assertRaises(oetp.OpError) as cm:
            d.write_block(0x200000, b"\x00" * 8)
        self.assertEqual((cm.exception.code, cm.exception.name), (14, "REMOTE_AXI_WR_SLVERR"))
        # The connection goes on after failures.
        d.write(0x104, 7)
        self.assertEqual(d.read(0x104), 7)

    def test_hub_errors(self):
        with self.assertRaises(oetp.HubError) as cm:
            self.hub.device("no-such-board")
        self.assertEqual(cm.exception.name, "NO_DEVICE")
        self.assertIn(DEVICE, str(cm.exception))

    def test_batch(self):
        d = self.dev
        with d.batch() as b:
            writes = [b.write(0x400 + 4 * i, i * 7) for i in range(50)]
            reads = [b.read(0x400 + 4 * i) for i in range(50)]
            blk = b.read_block(0x400, 8)
            b.write_block(0x100010, b"abcd")
        self.assertTrue(all(w.done for w in writes))
        self.assertEqual([r.value for r in reads], [i * 7 for i in range(50)])
        self.assertEqual(blk.value, bytes([0, 0, 0, 0, 7, 0, 0, 0]))
        self.assertEqual(d.read_block(0x100010, 4), b"abcd")
        # A failing batch: operation 2 fails; 0 and 1 ran; 3 did not.
        d.write(0x500, 0)
        d.write(0x504, 0)
        with self.assertRaises(oetp.OpError) as cm:
            with d.batch() as b:
                r0 = b.write(0x500, 0x11)
                r1 = b.read(0x500)
                b.read(0x200000)
                r3 = b.write(0x504, 0x22)
        e = cm.exception
        self.assertEqual((e.index, e.code, e.name), (2, 12, "REMOTE_AXI_RD_SLVERR"))
        self.assertIn("batch operation 2", str(e))
        self.assertIn("0..1 completed", str(e))
        self.assertTrue(r0.done and r1.done)
        self.assertEqual(r1.value, 0x11)
        self.assertFalse(r3.done)
        self.assertEqual(d.read(0x504), 0)
        # Block reads past MAX_BATCH_READ in total: refused before anything
        # runs, by the client and, sent anyway, by the hub.
        d.write(0x504, 0)
        b = d.batch()
        w = b.write(0x504, 0x44)
        b.read_block(0x100000, oetp.MAX_BATCH_READ // 2)
        b.read_block(0x100000, oetp.MAX_BATCH_READ // 2 + 4)
        want = ("BATCH reads 4194308 block bytes, more than the 4194304 bytes a batch's block reads may total; "
                "read larger blocks with a plain block read (READ_BLOCK), which streams")
        with self.assertRaises(oetp.HubError) as cm:
            b.run()
        self.assertEqual((cm.exception.name, cm.exception.message, w.done), ("TOO_LARGE", want, False))
        body = struct.pack("<IBIII", 3, 0x11, 0x504, 0x44, 0xFFFFFFFF)
        body += struct.pack("<BII", 0x12, 0x100000, oetp.MAX_BATCH_READ // 2)
        body += struct.pack("<BII", 0x12, 0x100000, oetp.MAX_BATCH_READ // 2 + 4)
        with self.assertRaises(oetp.HubError) as cm:
            d._hub._call(0x20, d.handle, body)
        self.assertEqual((cm.exception.name, cm.exception.message), ("TOO_LARGE", want))
        self.assertEqual(d.read(0x504), 0)
        # An exception inside the block runs nothing.
        with self.assertRaises(KeyError):
            with d.batch() as b:
                b.write(0x504, 0x33)
                raise KeyError("x")
        self.assertEqual(d.read(0x504), 0)

    def test_status(self):
        s = self.hub.status()
        names = [x["name"] for x in s["devices"]]
        self.assertIn(DEVICE, names)
        self.assertGreaterEqual(s["clients"], 1)

    @unittest.skipUnless(os.environ.get("OETP_TEST_TABLE"), "the device has no address table")
    def test_nodes(self):
        d = self.dev
        self.assertTrue(d.has_table)
        reset = d.node("ctrl.reset")
        self.assertEqual(reset.mask, 0x00000001)
        self.assertEqual((reset.volatile, reset.words), (False, 1))
        fifo = d.node("fifo")
        self.assertEqual((fifo.volatile, fifo.words, fifo.mode), (True, 1, "port"))
        d.write(reset.address, 0xFFFFFFF0)
        reset.write(1)  # one masked write: the other bits stay
        self.assertEqual(d.read(reset.address), 0xFFFFFFF1)
        self.assertEqual(reset.read(), 1)
        mode = d.node("ctrl.mode")
        mode.write(0x5)
        self.assertEqual(mode.read(), 0x5)
        self.assertEqual(d.read(mode.address) & mode.mask, 0x5 << 4)
        with self.assertRaises(oetp.OpError) as cm:
            mode.write(0x100)  # does not fit the field
        self.assertEqual(cm.exception.name, "LOCAL_INVALID")
        d.write(0x104, 0xBEEF0000)
        self.assertEqual(d.node("status.id").read(), 0xBEEF)
        with self.assertRaises(oetp.OpError) as cm:
            d.node("status.id").write(1)  # read-only
        self.assertEqual(cm.exception.name, "LOCAL_INVALID")
        with self.assertRaises(oetp.HubError) as cm:
            d.node("ctrl.nope")
        self.assertEqual(cm.exception.name, "NO_NODE")
        self.assertTrue(any(n.name == "ctrl.reset" for n in d.nodes()))
        buf = d.node("buf")
        self.assertEqual((buf.address, buf.size, buf.mode), (0x100000, 64, "block"))
        buf.write_block(bytes(range(64)))
        self.assertEqual(buf.read_block(), bytes(range(64)))


WORKER = r"""
import json, random, sys
sys.path.insert(0, sys.argv[1])
import oetp
idx, pairs = int(sys.argv[2]), int(sys.argv[3])
dev = oetp.connect().device(sys.argv[4])
rng = random.Random(idx)
wrong = 0
regs = [0x8000 + 0x100 * idx + 4 * i for i in range(4)]
for i in range(pairs):
    a = regs[i % 4]
    v = rng.getrandbits(32)
    dev.write(a, v)
    if dev.read(a) != v:
        wrong += 1
print(json.dumps({"worker": idx, "pairs": pairs, "wrong": wrong}))
"""


@unittest.skipUnless(HUB, "OETP_HUB is not set")
class ConcurrencyTest(unittest.TestCase):
    def test_four_processes(self):
        """4 concurrent processes x 2,000 write/read-back pairs of their own
        registers: 0 wrong values."""
        pairs = int(os.environ.get("OETP_TEST_PAIRS", "2000"))
        t0 = time.time()
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, os.path.dirname(HERE), str(i), str(pairs), DEVICE],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(4)]
        results = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, err.decode())
            results.append(json.loads(out.decode().strip().splitlines()[-1]))
        elapsed = time.time() - t0
        self.assertEqual([r["wrong"] for r in results], [0, 0, 0, 0])
        self.assertEqual(sum(r["pairs"] for r in results), 4 * pairs)
        sys.stderr.write("\n4 processes x %d pairs: 0 wrong values, %.2fs (%.0f ops/s)\n" % (pairs, elapsed, 8 * pairs / elapsed))


if __name__ == "__main__":
    unittest.main()
