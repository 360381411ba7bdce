"""Python client of the oETP hub (``oetp hub``).

    import oetp
    hub = oetp.connect()                 # $OETP_HUB, /run/oetp/hub.sock or the per-user socket
    dev = hub.device("board1")
    dev.write(0x10, 0xC0FFEE01)
    value = dev.read(0x10)
    dev.write(0x10, 0x0000AB00, mask=0x0000FF00)   # one masked write, no read-modify-write
    data = dev.read_block(0x100000, 4096)          # DMA, lengths in bytes
    dev.write_block(0x100000, data)
    dev.node("ctrl.reset").write(1)                # address table names
    dev.regs.ctrl.enable.write(1)                  # ... as attributes; fields shifted
    dev.regs.scratch[2].read()                     # arrays (IP-XACT dim) by index
    dev = oetp.open_device("board1")               # by its name in the devices file, hub or not
    with dev.batch() as b:                         # one round trip
        r = b.read(0x10)
        b.write(0x14, 5)
    print(r.value)
    hub.group_write("boards", 0x100000, data, verify=True)   # a [[group]] of devices

Addresses are the device's oETP byte addresses. Every error is an
:class:`Error` with ``.maybe_executed`` (whether the operation may have run
at the device): a failed operation raises :class:`OpError` with ``.code``
(the CSR code 0..15), ``.name`` (its mnemonic), ``.addr`` (the failed
address) and ``.bytes`` (a block's bytes done); a failure of the hub itself
(unknown device, malformed request, busy) raises :class:`HubError`, and a
refusal by the device's access rules its subclass :class:`Denied`; a lost
connection :class:`HubGone`; no reply within the operation's deadline
(derived from the device's timeout and retries, or ``connect(timeout=S)``)
:class:`Timeout`; a call refused before anything is sent
:class:`UsageError`. No socket exception reaches the caller. The protocol
is docs/hub-protocol.md.
"""

import os

from ._client import (
    Batch,
    Denied,
    Device,
    Error,
    Hub,
    HubError,
    HubGone,
    Node,
    OpError,
    Result,
    UntrustedSocketError,
    check_socket,
    Timeout,
    UsageError,
    connect,
    default_socket,
    CODE_NAMES,
    MAX_BATCH_READ,
)
from ._devices import DeviceEntry, DevicesError, derive_mac, device_entry
from ._devices import load as load_devices
from ._regs import Regs

__all__ = [
    "Batch",
    "Denied",
    "Device",
    "Error",
    "Hub",
    "HubError",
    "HubGone",
    "Node",
    "OpError",
    "Result",
    "UntrustedSocketError",
    "check_socket",
    "Timeout",
    "UsageError",
    "connect",
    "default_socket",
    "CODE_NAMES",
    "MAX_BATCH_READ",
    "DeviceEntry",
    "DevicesError",
    "Regs",
    "derive_mac",
    "device_entry",
    "load_devices",
    "open_device",
]


def open_device(name, devices=None, hub=None, token=None, timeout=None, private=None, oetp=None,
                start_timeout=None):
    """Open the device ``name`` of the devices file (``devices``, else
    $OETP_DEVICES, else ~/.config/oetp/devices.toml: docs/devices.md), with
    the names, MACs and address table the CLI's ``--device NAME`` uses.

    The route, said by ``dev.via``:

    - ``"hub"``: a running hub serves the device: ``hub`` (a socket path or
      tcp://HOST:PORT, which must then serve it), else the default socket
      (:func:`default_socket`), checked like every hub socket. A hub that
      serves another board under that name raises :class:`UsageError`.
    - ``"private"``: no running hub serves it (none answers at the default
      socket, or it does not know the device): this process starts ``oetp
      hub`` for this one device (the ``oetp`` command on $PATH, or
      $OETP_BIN, or ``oetp=PATH``), its socket in a fresh directory only
      you can enter, and talks to it exactly as to a shared hub. It needs
      the right to open the interface (CAP_NET_RAW); an error says what is
      missing, after at most ``start_timeout`` seconds (default 10).
      ``private=True`` always starts one, ``private=False`` never.

    ``dev.hub_path`` is the hub's socket, ``dev.hub_pid`` a private hub's
    process id (None through a shared hub), ``dev.entry`` the DeviceEntry.
    ``close()`` closes the connection and stops a private hub, removing its
    directory; so does the device's garbage collection and the
    interpreter's exit, and the hub stops by itself if this process dies."""
    from ._private import START_TIMEOUT, open_private
    import weakref

    entry = device_entry(name, devices)
    explicit = hub is not None
    if private and explicit:
        raise UsageError("hub=%r and private=True contradict each other: drop one" % (hub,))
    if not private:
        path = hub or default_socket()
        h = None
        if explicit or path.startswith("tcp://") or _is_socket(path):
            try:
                h = connect(path, token=token, timeout=timeout)
            except UntrustedSocketError:
                raise
            except (OSError, Error) as e:
                if explicit or private is False:
                    raise Error("no hub answers at %s (%s); start one with: oetp hub --devices %s"
                                % (path, e, entry.file)) from None
            if h is not None and not explicit and not path.startswith("tcp://") and h.netns and h.netns != _netns():
                h.close()  # a hub in another network namespace: its interfaces are others
                h = None
        elif private is False:
            raise Error("no hub at %s (private=False); start one with: oetp hub --devices %s" % (path, entry.file))
        if h is not None:
            try:
                dev = h.device(name)
            except HubError as e:
                h.close()
                if explicit or private is False or e.name != "NO_DEVICE":
                    raise HubError(e.status, "the hub at %s does not serve %r (%s); start one with: oetp hub --devices %s"
                                   % (path, name, e.message, entry.file)) from None
            else:
                if dev.mac != entry.mac or dev.iface != entry.iface:
                    h.close()
                    raise UsageError("the hub's device %r is %s on %s, the devices file's %s on %s (%s:%d): they name different boards"
                                     % (name, dev.mac, dev.iface, entry.mac, entry.iface, entry.file, entry.line))
                dev.entry, dev.via, dev.hub_path, dev.hub_pid = entry, "hub", path, None
                dev.close = h.close
                return dev
    priv, h, dev = open_private(entry, oetp=oetp, start_timeout=start_timeout or START_TIMEOUT, token=token, timeout=timeout)
    dev.entry, dev.via, dev.hub_path, dev.hub_pid = entry, "private", priv.path, priv.pid
    # Runs once: on close(), when the device is collected, or at exit.
    dev.close = weakref.finalize(dev, _close_private, h, priv)
    return dev


def _close_private(h, priv):
    try:
        h.close()
    finally:
        priv.stop()


def _is_socket(path):
    import stat
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def _netns():
    try:
        return os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return 0


__version__ = "0.1.0"
