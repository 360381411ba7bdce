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
    dev = oetp.open_device("board1")               # by its name in the devices file
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
(unknown device, malformed request, busy) raises :class:`HubError`; a lost
connection :class:`HubGone`; no reply within the operation's deadline
(derived from the device's timeout and retries, or ``connect(timeout=S)``)
:class:`Timeout`; a call refused before anything is sent
:class:`UsageError`. No socket exception reaches the caller. The protocol
is docs/hub-protocol.md.
"""

from ._client import (
    Batch,
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
)
from ._devices import DeviceEntry, DevicesError, derive_mac, device_entry
from ._devices import load as load_devices
from ._regs import Regs

__all__ = [
    "Batch",
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
    "DeviceEntry",
    "DevicesError",
    "Regs",
    "derive_mac",
    "device_entry",
    "load_devices",
    "open_device",
]


def open_device(name, devices=None, hub=None, token=None, timeout=None):
    """Open the device ``name`` of the devices file (``devices``, else
    $OETP_DEVICES, else ~/.config/oetp/devices.toml: docs/devices.md) through
    the hub at ``hub`` (default: :func:`default_socket`). The Python client
    reaches boards through a hub: run ``oetp hub --devices FILE`` with the
    same file, and the names, MACs and address tables are the same as the
    CLI's ``--device NAME``. The device's ``entry`` is its DeviceEntry;
    ``close()`` closes its hub connection."""
    entry = device_entry(name, devices)
    try:
        h = connect(hub, token=token, timeout=timeout)
    except UntrustedSocketError:
        raise
    except (OSError, Error) as e:
        raise Error("no hub answers (%s): the Python client reaches %r through a hub; start one with: oetp hub --devices %s"
                    % (e, name, entry.file)) from None
    try:
        dev = h.device(name)
    except HubError as e:
        h.close()
        raise HubError(e.status, "the hub does not serve %r (%s); start it with: oetp hub --devices %s" % (name, e.message, entry.file)) from None
    if dev.mac != entry.mac or dev.iface != entry.iface:
        h.close()
        raise UsageError("the hub's device %r is %s on %s, the devices file's %s on %s (%s:%d): they name different boards"
                         % (name, dev.mac, dev.iface, entry.mac, entry.iface, entry.file, entry.line))
    dev.entry = entry
    dev.close = h.close
    return dev

__version__ = "0.1.0"
