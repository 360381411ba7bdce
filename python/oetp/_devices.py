"""The devices file (docs/devices.md): boards by name, the same TOML the CLI
(``--device NAME``) and the hub (``oetp hub --devices FILE``) read."""

import os
import re
import stat

from ._client import Error, UsageError

ENV = "OETP_DEVICES"
MAX_FILE_SIZE = 1 << 20
DEFAULT_TIMEOUT = 1.0
ROLES = ("rmem", "dma_write", "dma_read")
_KEYS = ("iface", "mac", "local_mac", "rmem_mac", "dma_write_mac", "dma_read_mac", "transport", "timeout", "address_table")
_KEYS_HELP = ("a [device.NAME] table has iface, mac, local_mac (or rmem_mac, dma_write_mac, dma_read_mac), "
              "transport, timeout, address_table")


class DevicesError(Error, ValueError):
    """A devices-file error: ``file``, ``line`` (0 if unknown) and a message
    that says what to change."""

    def __init__(self, file, line, msg):
        self.file, self.line = file, line
        super().__init__("%s:%d: %s" % (file, line, msg) if line else "%s: %s" % (file, msg))


def default_path():
    """$XDG_CONFIG_HOME/oetp/devices.toml, else ~/.config/oetp/devices.toml."""
    x = os.environ.get("XDG_CONFIG_HOME", "")
    if x and os.path.isabs(x):
        return os.path.join(x, "oetp", "devices.toml")
    return os.path.join(os.path.expanduser("~"), ".config", "oetp", "devices.toml")


def find(path=None):
    """The devices file to read: ``path``, else $OETP_DEVICES, else default_path()."""
    return path or os.environ.get(ENV) or default_path()


def parse_mac(s):
    parts = s.split(":") if isinstance(s, str) else []
    if len(parts) != 6 or not all(re.fullmatch(r"[0-9a-fA-F]{2}", p) for p in parts):
        raise ValueError("%r is not a MAC address such as 02:0e:0c:00:00:01" % (s,))
    return bytes(int(p, 16) for p in parts)


def format_mac(b):
    return ":".join("%02x" % x for x in b)


def derive_mac(seed, name, role):
    """The local MAC of ``role`` (0 rmem, 1 dma_write, 2 dma_read) for the
    device ``name``, derived from ``seed`` (the local_mac, or the board's mac)
    exactly as oetp and its hub derive it: FNV-1a 64 of seed, name, 0, role;
    its low bytes first; unicast, locally administered."""
    h = 0xCBF29CE484222325
    for byte in bytes(seed) + name.encode() + bytes((0, role)):
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    m = bytearray((h >> (8 * i)) & 0xFF for i in range(6))
    m[0] = (m[0] & ~0x03 & 0xFF) | 0x02
    return bytes(m)


class DeviceEntry:
    """One [device.NAME]: ``name``, ``iface``, ``mac``, ``local`` (role name to
    MAC string), ``transport``, ``timeout`` (seconds; 0 waits forever),
    ``address_table`` (resolved against the file's directory, or None),
    ``file``, ``line``."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return "<oetp.DeviceEntry %s %s on %s>" % (self.name, self.mac, self.iface)


def _duration(s):
    m = re.fullmatch(r"((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+|0", s)
    if not m:
        return None
    total = 0.0
    for num, unit in re.findall(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)", s):
        total += float(num) * {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def load(path=None):
    """Read the devices file (``path``, $OETP_DEVICES or the default) and
    return {name: DeviceEntry}. Raises DevicesError naming the file and line."""
    path = find(path)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise DevicesError(path, 0, "cannot read the devices file: %s" % (e.strerror or e)) from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if stat.S_ISDIR(st.st_mode):
            raise DevicesError(path, 0, "is a directory: give the devices file (TOML)")
        if hasattr(os, "getuid") and st.st_uid not in (os.getuid(), 0):
            raise DevicesError(path, 0, "belongs to uid %d, not to you (uid %d) or root: another user could change the "
                                        "devices you reach; use a file of your own" % (st.st_uid, os.getuid()))
        if st.st_mode & 0o002:
            raise DevicesError(path, 0, "is writable by every user: another user could change the devices you reach; chmod o-w it")
        data = f.read(MAX_FILE_SIZE + 1)
    if len(data) > MAX_FILE_SIZE:
        raise DevicesError(path, 0, "more than %d bytes: a devices file lists devices, not data" % MAX_FILE_SIZE)
    return parse(path, data)


def _header_line(lines, name):
    pat = re.compile(r"""^\s*\[\s*device\s*\.\s*("([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*\]""")
    for i, l in enumerate(lines):
        m = pat.match(l)
        if m and name in (m.group(2), m.group(3), m.group(4)):
            return i + 1
    return 0


def _key_line(lines, name, key):
    h = _header_line(lines, name)
    if not h:
        return 0
    for i in range(h, len(lines)):
        t = lines[i].strip()
        if t.startswith("["):
            break
        k, eq, _ = t.partition("=")
        if eq and k.strip().strip("\"'") == key:
            return i + 1
    return h


def parse(path, data):
    """Parse a devices file's bytes (see load)."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        raise Error("reading a devices file needs Python 3.11 or later (tomllib)") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines()
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise DevicesError(path, int(m.group(1)) if m else 0, "TOML: %s" % e) from None
    for k in doc:
        if k != "device":
            raise DevicesError(path, 0, "unknown key %r: %s" % (k, _KEYS_HELP))
    devs = doc.get("device", {})
    if not isinstance(devs, dict):
        raise DevicesError(path, 0, "device must be tables [device.NAME]")
    base = os.path.dirname(path)
    out = {}
    used = {}
    for name in sorted(devs):
        fd = devs[name]
        head = _header_line(lines, name)

        def err(key, msg, name=name, head=head):
            return DevicesError(path, _key_line(lines, name, key) if key else head, "device %r: %s" % (name, msg))

        if not isinstance(fd, dict):
            raise err("", "is not a table")
        for k in fd:
            if k not in _KEYS:
                raise DevicesError(path, _key_line(lines, name, k), "unknown key %r: %s" % ("device.%s.%s" % (name, k), _KEYS_HELP))
            if not isinstance(fd[k], str):
                raise err(k, "%s must be a string" % k)
        if not name or len(name) > 255 or re.search(r"[\s/\\\x00]", name):
            raise err("", "a device name is 1..255 bytes without spaces or slashes")
        if not fd.get("iface"):
            raise err("", 'iface is missing: name the interface facing the board, e.g. iface = "eth1"')
        if not fd.get("mac"):
            raise err("", 'mac is missing: give the board\'s MAC, e.g. mac = "02:0e:0c:00:00:02"')
        try:
            mac = parse_mac(fd["mac"])
        except ValueError as e:
            raise err("mac", "mac: %s" % e) from None
        if mac[0] & 1 or mac == bytes(6):
            raise err("mac", "mac %s is not a unicast address: give the board's own MAC" % fd["mac"])
        seed = mac
        if fd.get("local_mac"):
            try:
                seed = parse_mac(fd["local_mac"])
            except ValueError as e:
                raise err("local_mac", "local_mac: %s" % e) from None
        local = {}
        for r, role in enumerate(ROLES):
            key = role + "_mac"
            if not fd.get(key):
                local[role] = derive_mac(seed, name, r)
                continue
            try:
                m = parse_mac(fd[key])
            except ValueError as e:
                raise err(key, "%s: %s" % (key, e)) from None
            if m[0] & 1 or m == bytes(6):
                raise err(key, "%s %s is not a unicast address: this host's MACs must be unicast" % (key, fd[key]))
            if m == mac:
                raise err(key, "%s %s is the board's own MAC: use another address" % (key, fd[key]))
            local[role] = m
        for i in range(3):
            for j in range(i + 1, 3):
                if local[ROLES[i]] == local[ROLES[j]]:
                    raise err(ROLES[j] + "_mac", "%s_mac and %s_mac are both %s: a v1 peer entry has one mode, so each role needs its own MAC"
                              % (ROLES[i], ROLES[j], format_mac(local[ROLES[i]])))
        transport = fd.get("transport") or "v1"
        if transport not in ("v1", "reliable", "auto"):
            raise err("transport", "transport = %r is not v1, reliable or auto" % transport)
        timeout = DEFAULT_TIMEOUT
        if fd.get("timeout"):
            timeout = _duration(fd["timeout"])
            if timeout is None:
                raise err("timeout", 'timeout = %r is not a duration such as "250ms" (or "0" to wait forever)' % fd["timeout"])
        table = fd.get("address_table") or None
        if table and not os.path.isabs(table):
            table = os.path.join(base, table)
        for role in ROLES:
            k = (fd["iface"], local[role])
            if k in used:
                raise DevicesError(path, head, "device %r: %s_mac %s on %s is already %s: one MAC is one endpoint; give each device its own local_mac"
                                   % (name, role, format_mac(local[role]), fd["iface"], used[k]))
            used[k] = "device %r's %s_mac" % (name, role)
        out[name] = DeviceEntry(name=name, iface=fd["iface"], mac=format_mac(mac),
                                local={r: format_mac(local[r]) for r in ROLES}, transport=transport,
                                timeout=timeout, address_table=table, file=path, line=head)
    return out


def device_entry(name, path=None):
    """The DeviceEntry called ``name`` of the devices file."""
    devs = load(path)
    if name not in devs:
        f = find(path)
        if not devs:
            raise UsageError("no device %r in %s: it defines none; add a [device.%s] table" % (name, f, name))
        raise UsageError("no device %r in %s: its devices are %s" % (name, f, ", ".join(sorted(devs))))
    return devs[name]
