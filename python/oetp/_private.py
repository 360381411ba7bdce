"""A private hub: when no running hub serves a device, open_device starts
``oetp hub`` for that one device in a child process, with its socket in a
fresh directory only this user can enter, and talks to it exactly as to a
shared hub. The protocol stays in the oetp command; nothing of it is
reimplemented here.

A small watchdog process stands between this process and the hub: it
starts the hub, and when this process closes the device, exits or dies
(its end of the watchdog's stdin pipe closes), it stops the hub and removes
the directory. So the hub never outlives its user, even after a SIGKILL."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from ._client import Error, HubGone, connect

BIN_ENV = "OETP_BIN"
START_TIMEOUT = 10.0
_STOP_TIMEOUT = 10.0
_LOG_LINES = 40

# Run by the watchdog (python -I -c): argv[1] is the directory to remove,
# the rest the hub's command line.
_WATCHDOG = r"""
import os, shutil, signal, subprocess, sys, threading
signal.signal(signal.SIGINT, signal.SIG_IGN)
d, cmd = sys.argv[1], sys.argv[2:]
try:
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
except OSError as e:
    sys.stderr.write("oetp: cannot run %s: %s\n" % (cmd[0], e))
    shutil.rmtree(d, ignore_errors=True)
    sys.exit(1)
def stop():
    try:
        while os.read(0, 512):
            pass
    except OSError:
        pass
    p.terminate()
    try:
        p.wait(5)
    except subprocess.TimeoutExpired:
        p.kill()
threading.Thread(target=stop, daemon=True).start()
p.wait()
shutil.rmtree(d, ignore_errors=True)
"""


def find_binary(path=None):
    """The oetp command: ``path``, else $OETP_BIN, else ``oetp`` on $PATH.
    Raises Error saying what is missing."""
    p = path or os.environ.get(BIN_ENV) or shutil.which("oetp")
    if not p:
        raise Error("no oetp command: it is not on $PATH; install it, or give its path with $%s or oetp=PATH" % BIN_ENV)
    if not (os.path.isfile(p) and os.access(p, os.X_OK)):
        raise Error("the oetp command %s is not an executable file; fix $%s or oetp=PATH" % (p, BIN_ENV))
    return p


def _runtime_dir():
    d = os.environ.get("XDG_RUNTIME_DIR")
    if d and os.path.isabs(d) and os.path.isdir(d):
        return d
    return tempfile.gettempdir()


def _toml_device(entry):
    """The [device.NAME] table of ``entry`` alone, with its role MACs given
    one by one and its address table by absolute path, so that the private
    hub uses exactly the devices file's MACs and table."""
    q = json.dumps  # a TOML basic string is a JSON string here: ASCII escapes only
    lines = ["[device.%s]" % q(entry.name),
             "iface = %s" % q(entry.iface),
             "mac = %s" % q(entry.mac)]
    for role in ("rmem", "dma_write", "dma_read"):
        lines.append("%s_mac = %s" % (role, q(entry.local[role])))
    lines.append("transport = %s" % q(entry.transport))
    lines.append("timeout = %s" % q("%dns" % round(entry.timeout * 1e9) if entry.timeout else "0"))
    if entry.address_table:
        lines.append("address_table = %s" % q(os.path.abspath(entry.address_table)))
    return ("\n".join(lines) + "\n").encode()


class PrivateHub:
    """``oetp hub`` for one device, started by this process (see the module's
    doc). ``path`` is its socket, ``pid`` the hub's process id once
    connected, ``dir`` the directory holding the socket."""

    def __init__(self, entry, oetp=None, start_timeout=START_TIMEOUT):
        self.entry = entry
        self.binary = find_binary(oetp)
        self.dir = tempfile.mkdtemp(prefix="oetp-hub-", dir=_runtime_dir())  # mode 0700
        self.path = os.path.join(self.dir, "hub.sock")
        self.pid = None
        self._owner = os.getpid()  # a forked child must not stop its parent's hub
        self._log = []
        self._log_lock = threading.Lock()
        self._ready = threading.Event()
        self._ended = threading.Event()
        self._proc = None
        try:
            devfile = os.path.join(self.dir, "devices.toml")
            fd = os.open(devfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(_toml_device(entry))
            self.argv = [self.binary, "hub", "--devices", devfile, "--socket", self.path]
            try:
                self._proc = subprocess.Popen([sys.executable, "-I", "-c", _WATCHDOG, self.dir] + self.argv,
                                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                              start_new_session=True, close_fds=True)
            except OSError as e:
                raise Error("cannot start the private hub's watchdog (%s): %s" % (sys.executable or "no Python interpreter path", e)) from None
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        threading.Thread(target=self._read_log, args=(self._proc.stderr,), daemon=True).start()
        if not self._wait_ready(start_timeout):
            exited = self._ended.is_set()
            self.stop()
            raise self._start_error(start_timeout, exited)

    def _read_log(self, f):
        for raw in f:
            line = raw.decode("utf-8", "replace").rstrip("\n")[:500]
            with self._log_lock:
                self._log.append(line)
                del self._log[:-_LOG_LINES]
            if "msg=ready" in line:
                self._ready.set()
        self._ended.set()

    def _wait_ready(self, timeout):
        end = time.monotonic() + timeout
        while not self._ready.is_set():
            left = end - time.monotonic()
            if left <= 0 or self._ended.is_set():
                return False
            self._ready.wait(min(left, 0.05))
        return True

    def log(self):
        """The hub's last lines on stderr."""
        with self._log_lock:
            return list(self._log)

    def _start_error(self, timeout, exited):
        log = self.log()
        text = "\n".join(log) or "(nothing on stderr)"
        what = "exited before it was ready" if exited else "did not report ready within %gs" % timeout
        hint = ""
        joined = text.lower()
        if "cap_net_raw" in joined or "operation not permitted" in joined:
            hint = ("; opening %s needs CAP_NET_RAW: run as root, or grant it to the command "
                    "(setcap cap_net_raw,cap_net_admin+ep %s), or start a shared hub: oetp hub --devices %s"
                    % (self.entry.iface, self.binary, self.entry.file))
        return Error("no hub serves %r, and the private hub this process started for it (%s) %s%s:\n%s"
                     % (self.entry.name, " ".join(self.argv), what, hint, text))

    def connect(self, token=None, timeout=None):
        """A connection to the private hub (checked like any hub socket)."""
        h = connect(self.path, token=token, timeout=timeout)
        try:
            import socket
            import struct
            pid, _, _ = struct.unpack("3i", h._sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
            self.pid = pid
        except (AttributeError, OSError):
            pass
        return h

    def stop(self):
        """Stop the hub and remove its directory; waits until both are done
        (bounded). Safe to call more than once; does nothing in a child
        forked after the hub started (the hub is its parent's)."""
        if os.getpid() != self._owner:
            return
        p, self._proc = self._proc, None
        if p is not None:
            try:
                p.stdin.close()
            except OSError:
                pass
            try:
                p.wait(_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            self._ended.wait(2)  # the hub's last lines
            try:
                p.stderr.close()
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


def open_private(entry, oetp=None, start_timeout=START_TIMEOUT, token=None, timeout=None):
    """Start a private hub for ``entry`` and open its device: returns
    (PrivateHub, Hub, Device). Raises Error (hub did not start) or the
    connection's error; nothing is left running on failure."""
    priv = PrivateHub(entry, oetp=oetp, start_timeout=start_timeout)
    try:
        h = priv.connect(token=token, timeout=timeout)
    except BaseException:
        priv.stop()
        raise
    try:
        dev = h.device(entry.name)
    except BaseException as e:
        h.close()
        priv.stop()
        if isinstance(e, HubGone):
            raise Error("the private hub for %r stopped: %s\n%s" % (entry.name, e, "\n".join(priv.log()))) from None
        raise
    return priv, h, dev
