"""Tests of the private hub that need no board: the devices file it gives
the hub, and its failures to start (no oetp command, a hub that exits, one
that never gets ready), each with an error that says what is missing and
nothing left behind. tests/private_check.py, run by cmd/oetp's
TestDevicesFileOverVeth, drives a real one against a board."""

import os
import sys
import tempfile
import time
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import oetp  # noqa: E402
from oetp import _devices, _private  # noqa: E402

DEVICES = b"""[device.board1]
iface = "eth9"
mac = "02:0e:0c:00:00:02"
local_mac = "02:0e:0c:00:01:00"
timeout = "250ms"
address_table = "board1.xml"
"""


class PrivateHubTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.run_dir = os.path.join(self.tmp.name, "run")
        os.mkdir(self.run_dir, 0o700)
        self.devfile = os.path.join(self.tmp.name, "devices.toml")
        with open(self.devfile, "wb") as f:
            f.write(DEVICES)
        env = mock.patch.dict(os.environ, {"XDG_RUNTIME_DIR": self.run_dir, "OETP_HUB": os.path.join(self.tmp.name, "none.sock")})
        env.start()
        self.addCleanup(env.stop)

    def fake(self, script):
        p = os.path.join(self.tmp.name, "oetp")
        with open(p, "w") as f:
            f.write("#!/bin/sh\n" + script)
        os.chmod(p, 0o700)
        return p

    def assertNothingLeft(self):
        self.assertEqual(os.listdir(self.run_dir), [], "the private hub's directory was removed")

    def test_devices_file_for_the_hub(self):
        # The one device, its role MACs one by one and its table by absolute
        # path: the hub's MACs and table are the devices file's.
        e = _devices.parse(self.devfile, DEVICES)["board1"]
        text = _private._toml_device(e)
        back = _devices.parse("/elsewhere/devices.toml", text)["board1"]
        for k in ("name", "iface", "mac", "local", "transport", "timeout", "address_table"):
            self.assertEqual(getattr(back, k), getattr(e, k), k)
        self.assertIn(b'timeout = "250000000ns"', text)

    def test_no_oetp_command(self):
        with mock.patch.dict(os.environ, {"PATH": self.tmp.name}), mock.patch.dict(os.environ, {}, clear=False) as env:
            env.pop(_private.BIN_ENV, None)
            with self.assertRaises(oetp.Error) as cm:
                oetp.open_device("board1", devices=self.devfile)
        self.assertIn("no oetp command: it is not on $PATH", str(cm.exception))
        self.assertIn("$OETP_BIN", str(cm.exception))
        with self.assertRaises(oetp.Error) as cm:
            oetp.open_device("board1", devices=self.devfile, oetp=os.path.join(self.tmp.name, "missing"))
        self.assertIn("is not an executable file", str(cm.exception))
        self.assertNothingLeft()

    def test_hub_exits(self):
        # What oetp hub prints without CAP_NET_RAW.
        bin = self.fake('echo "oetp: hub: device board1: afpacket: open eth9 needs CAP_NET_RAW: run as root or grant it" >&2\nexit 2\n')
        with self.assertRaises(oetp.Error) as cm:
            oetp.open_device("board1", devices=self.devfile, oetp=bin)
        msg = str(cm.exception)
        self.assertIn("no hub serves 'board1', and the private hub this process started for it", msg)
        self.assertIn("exited before it was ready; opening eth9 needs CAP_NET_RAW: run as root", msg)
        self.assertIn("afpacket: open eth9 needs CAP_NET_RAW", msg)
        self.assertIn("oetp hub --devices " + self.devfile, msg)
        self.assertNothingLeft()

    def test_start_deadline(self):
        bin = self.fake('echo started >&2\nexec sleep 30\n')
        t0 = time.monotonic()
        with self.assertRaises(oetp.Error) as cm:
            oetp.open_device("board1", devices=self.devfile, oetp=bin, start_timeout=0.5)
        self.assertLess(time.monotonic() - t0, 8, "the deadline and the stop are bounded")
        self.assertIn("did not report ready within 0.5s", str(cm.exception))
        self.assertIn("started", str(cm.exception))
        self.assertNothingLeft()

    def test_no_interpreter(self):
        bin = self.fake("exit 0\n")
        with mock.patch.object(_private.sys, "executable", os.path.join(self.tmp.name, "no-python")):
            with self.assertRaises(oetp.Error) as cm:
                oetp.open_device("board1", devices=self.devfile, oetp=bin)
        self.assertIn("cannot start the private hub's watchdog", str(cm.exception))
        self.assertNothingLeft()

    def test_stop_and_fork(self):
        # A hub that gets ready: stop() ends it and removes the directory,
        # but not from a child forked meanwhile (the hub is the parent's).
        bin = self.fake('echo "level=INFO msg=ready" >&2\nexec sleep 30\n')
        e = _devices.parse(self.devfile, DEVICES)["board1"]
        priv = _private.PrivateHub(e, oetp=bin, start_timeout=5)
        self.assertTrue(os.path.isdir(priv.dir))
        self.assertEqual(os.stat(priv.dir).st_mode & 0o777, 0o700)
        pid = os.fork()
        if pid == 0:
            import signal
            signal.alarm(10)  # a stop() that waits for a hub not its own fails the test
            priv.stop()
            os._exit(0 if os.path.isdir(priv.dir) else 1)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(status, 0, "a forked child's stop() left the hub alone")
        self.assertTrue(os.path.isdir(priv.dir))
        t0 = time.monotonic()
        priv.stop()
        self.assertLess(time.monotonic() - t0, 8)
        self.assertNothingLeft()
        priv.stop()

    def test_private_false(self):
        with self.assertRaises(oetp.Error) as cm:
            oetp.open_device("board1", devices=self.devfile, private=False)
        self.assertIn("(private=False); start one with: oetp hub --devices", str(cm.exception))
        with self.assertRaises(oetp.UsageError):
            oetp.open_device("board1", devices=self.devfile, hub="/x.sock", private=True)


if __name__ == "__main__":
    unittest.main()
