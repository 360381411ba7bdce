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
    with dev.batch() as b:                         # one round trip
        r = b.read(0x10)
        b.write(0x14, 5)
    print(r.value)
    hub.group_write("boards", 0x100000, data, verify=True)   # a [[group]] of devices

Addresses are the device's oETP byte addresses. A failed operation raises
:class:`OpError` with ``.code`` (the CSR code 0..15) and ``.name`` (its
mnemonic); a failure of the hub itself (unknown device, malformed request)
raises :class:`HubError`. An argument out of range (an address, value or mask
outside 0..2**32-1) raises :class:`UsageError`, a ValueError, before anything
is sent. The protocol is docs/hub-protocol.md.
"""

from ._client import (
    Batch,
    Device,
    Error,
    Hub,
    HubError,
    Node,
    OpError,
    Result,
    UntrustedSocketError,
    check_socket,
    UsageError,
    connect,
    default_socket,
    CODE_NAMES,
)

__all__ = [
    "Batch",
    "Device",
    "Error",
    "UsageError",
    "Hub",
    "HubError",
    "Node",
    "OpError",
    "Result",
    "UntrustedSocketError",
    "check_socket",
    "connect",
    "default_socket",
    "CODE_NAMES",
]

__version__ = "0.1.0"
