"""Out-of-range arguments are refused before anything is sent (no hub
needed): an address of 2**32 or more, a value or mask wider than 32 bits,
a negative one, a block that ends past the 4 GiB address space. Each
raises oetp.UsageError, an oetp.Error and a ValueError naming the argument
and its range, never a truncated write or a struct.error."""

import os
import socket
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import oetp  # noqa: E402
from tests.test_framing import FakeHub  # noqa: E402


class RangeTest(unittest.TestCase):
    def setUp(self):
        self.fh = FakeHub([])
        self.dev = self.fh.dev

    def tearDown(self):
        self.fh.close()

    def assertRefused(self, fn, *words):
        with self.assertRaises(oetp.UsageError) as cm:
            fn()
        e = cm.exception
        self.assertIsInstance(e, ValueError)
        self.assertIsInstance(e, oetp.Error)
        for w in words:
            self.assertIn(w, str(e))
        # Nothing reached the hub.
        self.fh.peer.setblocking(False)
        with self.assertRaises(BlockingIOError):
            self.fh.peer.recv(1)

    def test_write_value(self):
        self.assertRefused(lambda: self.dev.write(0x10, (1 << 33) | 5), "value = 0x200000005", "0..0xffffffff")

    def test_write_mask(self):
        self.assertRefused(lambda: self.dev.write(0x10, 5, mask=1 << 40), "mask = 0x10000000000")

    def test_write_negative(self):
        self.assertRefused(lambda: self.dev.write(0x10, -1), "value = -0x1")

    def test_write_addr(self):
        self.assertRefused(lambda: self.dev.write(1 << 32, 5), "addr = 0x100000000")

    def test_read_addr(self):
        self.assertRefused(lambda: self.dev.read(1 << 32), "addr = 0x100000000")

    def test_not_an_integer(self):
        self.assertRefused(lambda: self.dev.write(0x10, 1.5), "value must be an integer")

    def test_group_write(self):
        h = self.dev._hub
        self.assertRefused(lambda: h.group_write("g", 1 << 32, b"abcd"), "addr = 0x100000000")
        self.assertRefused(lambda: h.group_write("g", -4, b"abcd"), "addr = -0x4")
        self.assertRefused(lambda: h.group_write("g", 0xFFFFFFFE, b"abcd"), "past the 4 GiB address space", "room for 2 bytes")

    def test_blocks(self):
        self.assertRefused(lambda: self.dev.read_block(1 << 32, 4), "addr = 0x100000000")
        self.assertRefused(lambda: self.dev.read_block(0xFFFFFFFC, 8), "past the 4 GiB address space", "room for 4 bytes")
        self.assertRefused(lambda: self.dev.write_block(0xFFFFFFFC, b"12345678"), "past the 4 GiB")

    def test_batch(self):
        b = self.dev.batch()
        self.assertRefused(lambda: b.write(0x10, (1 << 33) | 5), "value = 0x200000005")
        self.assertRefused(lambda: b.write(0x10, 5, mask=1 << 40), "mask")
        self.assertRefused(lambda: b.read(1 << 32), "addr")
        self.assertRefused(lambda: b.read_block(0xFFFFFFFF, 2), "past the 4 GiB")
        self.assertEqual(len(b), 0)


if __name__ == "__main__":
    unittest.main()
