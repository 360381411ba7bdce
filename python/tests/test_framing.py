"""Tests of the Python client's reply framing against a scripted peer on a
socket pair (no hub needed): replies split into single bytes, a reply
larger than the receive buffer, a fast-path reply that is not OK, a reply
with the wrong tag."""

import os
import socket
import struct
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import oetp  # noqa: E402
from oetp import _client  # noqa: E402


def reply(typ, tag, status=0, msg=b"", result=b""):
    body = struct.pack("<BBH", status, 0, len(msg)) + msg + result
    return struct.pack("<IBBHI", 8 + len(body), typ | 0x80, 0, 0, tag) + body


class FakeHub:
    """A Hub on one end of a socket pair; ``serve`` answers each request
    read from the other end with the next scripted reply, sent in chunks."""

    def __init__(self, replies, chunk=None):
        a, b = socket.socketpair()
        a.settimeout(5)  # a broken script fails the test, never hangs it
        self.peer = b
        self.hub = object.__new__(_client.Hub)
        h = self.hub
        h.path, h._sock, h._lock, h._tag = "test", a, threading.Lock(), 0
        h.timeout, h._deadline, h._sent, h._dead = None, 5, False, False
        h._buf = bytearray(_client._RECV_BUF)
        h._mv = memoryview(h._buf)
        h._pending = 0
        self.dev = object.__new__(_client.Device)
        self.dev._hub, self.dev.handle = h, 1
        self.dev.bound, self.dev.max_fragment = 1.0, 1024
        self.thread = threading.Thread(target=self._serve, args=(replies, chunk), daemon=True)
        self.thread.start()

    def _serve(self, replies, chunk):
        f = self.peer.makefile("rb")
        for make in replies:
            hdr = f.read(12)
            if len(hdr) < 12:
                return
            length, _, _, _, tag = struct.unpack("<IBBHI", hdr)
            f.read(length - 8)
            data = make(tag)
            step = chunk or max(1, len(data))
            for i in range(0, len(data), step):
                self.peer.sendall(data[i:i + step])
        self.peer.shutdown(socket.SHUT_WR)  # the script is over: end of file

    def close(self):
        self.hub.close()
        self.peer.close()
        self.thread.join(5)


class FramingTest(unittest.TestCase):
    def fake(self, replies, chunk=None):
        """A FakeHub closed when the test ends."""
        fh = FakeHub(replies, chunk)
        self.addCleanup(fh.close)
        return fh

    def test_split_replies(self):
        fh = self.fake([lambda t: reply(_client.READ, t, result=struct.pack("<I", 0xC0FFEE01)),
                        lambda t: reply(_client.WRITE, t),
                        lambda t: reply(_client.READ, t, status=12, msg=b"read 0x00200000: REMOTE_AXI_RD_SLVERR (12)")],
                       chunk=1)
        self.assertEqual(fh.dev.read(0x10), 0xC0FFEE01)
        fh.dev.write(0x10, 1)
        with self.assertRaises(oetp.OpError) as cm:
            fh.dev.read(0x200000)
        self.assertEqual((cm.exception.code, cm.exception.name), (12, "REMOTE_AXI_RD_SLVERR"))

    def test_error_on_fast_path(self):
        # A whole 20-byte reply that is not OK: the fast path hands it on.
        fh = self.fake([lambda t: reply(_client.READ, t, status=8, result=b"")[:16] + b"\0\0\0\0"])
        with self.assertRaises(oetp.OpError) as cm:
            fh.dev.read(0x10)
        self.assertEqual(cm.exception.name, "TIMEOUT")

    def test_big_reply(self):
        data = os.urandom((1 << 16) + 12345)
        res = struct.pack("<II", len(data), 2) + data
        fh = self.fake([lambda t: reply(_client.READ_BLOCK, t, result=res)] * 2, chunk=7000)
        self.assertEqual(fh.dev.read_block(0, len(data)), data)
        self.assertEqual(fh.dev.read_block(0, len(data)), data)

    def test_broken_replies(self):
        # A reply with another tag; the hub gone after half a reply, and
        # after none.
        cases = [
            ("wrong tag", lambda t: reply(_client.READ, t + 1, result=b"\0\0\0\0"), lambda d: d.read(0x10), "tag"),
            ("half a reply", lambda t: reply(_client.READ, t, result=b"\0\0\0\0")[:15], lambda d: d.read(0x10), "closed"),
            ("no reply", lambda t: b"", lambda d: d.write(0x10, 1), "closed"),
        ]
        for name, script, op, want in cases:
            with self.subTest(name):
                fh = self.fake([script])
                with self.assertRaises(oetp.Error) as cm:
                    op(fh.dev)
                self.assertIn(want, str(cm.exception))

    def test_error_detail(self):
        # A failed block carries the engine's error whole.
        detail = struct.pack("<BBHIIQI", 0, 6, 0, 0x200000, 1, 8160, 1)
        detail += struct.pack("<H", 9) + b"DMA write" + struct.pack("<H", 3) + b"why"
        body = struct.pack("<BBH", 14, 3, 1) + b"m" + struct.pack("<H", len(detail)) + detail + struct.pack("<II", 8160, 1)
        rep = struct.pack("<IBBHI", 8 + len(body), _client.WRITE_BLOCK | 0x80, 0, 0, 0)
        fh = self.fake([lambda t: rep[:8] + struct.pack("<I", t) + body])
        with self.assertRaises(oetp.OpError) as cm:
            fh.dev.write_block(0x1FE020, b"\0" * 16320)
        e = cm.exception
        self.assertEqual((e.code, e.name, e.maybe_executed, e.outcome_unknown, e.addr, e.bytes, e.fragments, e.op, e.cause, e.cause_text),
                         (14, "REMOTE_AXI_WR_SLVERR", True, False, 0x200000, 8160, 1, "DMA write", "memory", "why"))

    def test_hub_gone(self):
        # The hub dies after reading the request: the outcome is unknown,
        # and no socket exception reaches the caller.
        fh = self.fake([lambda t: b""])
        fh.peer.close()
        with self.assertRaises(oetp.HubGone) as cm:
            fh.dev.write(0x10, 1)
        self.assertTrue(cm.exception.maybe_executed)
        with self.assertRaises(oetp.HubGone) as cm:
            fh.dev.read(0x10)
        self.assertFalse(cm.exception.maybe_executed)

    def test_frozen_hub(self):
        # The hub reads the request and never answers: Timeout within the
        # deadline, maybe executed.
        hold = threading.Event()
        fh = self.fake([lambda t: (hold.wait(10), b"")[1]])
        self.addCleanup(hold.set)  # before the close: the script ends
        fh.hub.timeout = 0.3
        t0 = time.monotonic()
        with self.assertRaises(oetp.Timeout) as cm:
            fh.dev.read(0x10)
        took = time.monotonic() - t0
        self.assertTrue(cm.exception.maybe_executed)
        self.assertLess(took, 2)
        with self.assertRaises(oetp.HubGone):
            fh.dev.read(0x10)

    def test_default_deadline(self):
        fh = self.fake([])
        self.assertEqual(fh.dev.deadline(), _client.DEADLINE_MARGIN + 1.0)
        self.assertEqual(fh.dev.deadline(4096), _client.DEADLINE_MARGIN + 5.0)

    def test_notice(self):
        # The hub's notice (tag 0) before it closes: nothing ran.
        fh = self.fake([lambda t: reply(0x01, 0, status=0x8A, msg=b"idle")])
        with self.assertRaises(oetp.HubError) as cm:
            fh.dev.read(0x10)
        self.assertEqual(cm.exception.name, "IDLE")
        self.assertFalse(cm.exception.maybe_executed)

    def test_usage(self):
        fh = self.fake([])
        with self.assertRaises(oetp.UsageError):
            fh.dev.read_block(0, _client.MAX_BLOCK + 1)


if __name__ == "__main__":
    unittest.main()
