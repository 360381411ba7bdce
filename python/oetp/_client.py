"""The hub protocol (docs/hub-protocol.md) over a Unix or TCP socket."""

import os
import socket
import struct
import threading

VERSION = 1

# Request types; a reply carries type | 0x80.
HELLO = 0x01
OPEN = 0x02
CHALLENGE = 0x03
READ = 0x10
WRITE = 0x11
READ_BLOCK = 0x12
WRITE_BLOCK = 0x13
BATCH = 0x20
NODE_READ = 0x30
NODE_WRITE = 0x31
NODE_INFO = 0x32
NODES = 0x33
STATUS = 0x40
GROUP_WRITE = 0x14

FLAG_MAYBE_EXECUTED = 1
FLAG_DETAIL = 2
FLAG_PARTIAL = 4
MAX_BLOCK = 256 << 20
# The most bytes a batch's block reads may total (the hub's stream ring):
# larger reads go in a plain read_block, which streams.
MAX_BATCH_READ = 4 << 20
TOO_LARGE = 0x85

# A reply with this tag is the hub's notice before it closes the
# connection (its client limit, the idle timeout): the request in
# progress was not read and did not run.
NOTICE_TAG = 0

# The default deadline of an operation: this margin plus the device's
# bound (timeout, tries) for every fragment of a block and one more.
DEADLINE_MARGIN = 2.0

# The engine's causes (docs/hub-protocol.md, error detail).
CAUSE_NAMES = {0: None, 1: "invalid", 2: "timeout", 3: "reset", 4: "closed", 5: "link", 6: "memory",
               7: "canceled", 8: "deadline", 9: "other", 10: "stalled"}

CODE_NAMES = (
    "NONE", "LOCAL_INVALID", "LOCAL_AXIS", "LOCAL_OVERFLOW",
    "LOCAL_AXI_RD_SLVERR", "LOCAL_AXI_RD_DECERR", "LOCAL_AXI_WR_SLVERR", "LOCAL_AXI_WR_DECERR",
    "TIMEOUT", "REMOTE_INVALID", "REMOTE_AXIS", "REMOTE_OVERFLOW",
    "REMOTE_AXI_RD_SLVERR", "REMOTE_AXI_RD_DECERR", "REMOTE_AXI_WR_SLVERR", "REMOTE_AXI_WR_DECERR",
)

HUB_ERRORS = {
    0x80: "BAD_MESSAGE", 0x81: "UNKNOWN_TYPE", 0x82: "AUTH", 0x83: "NO_DEVICE",
    0x84: "NO_NODE", 0x85: "TOO_LARGE", 0x86: "SHUTDOWN", 0x87: "VERSION",
    0x88: "DENIED", 0x89: "BUSY", 0x8A: "IDLE", 0x8B: "STALLED",
}

DENIED = 0x88
AUTH = 0x82
NONCE_LEN = 32

PERMISSIONS = {1: "r", 2: "w", 3: "rw"}
MODES = {0: "single", 1: "block", 2: "incremental", 3: "non-incremental", 4: "port"}

_HDR = struct.Struct("<IBBHI")          # length, type, reserved, handle, tag
_REQ_READ = struct.Struct("<IBBHII")    # header + address
_REQ_WRITE = struct.Struct("<IBBHIIII")  # header + address, data, mask
_REQ_RBLK = struct.Struct("<IBBHIII")   # header + address, length
_STATUS = struct.Struct("<BBH")         # status, flags, message length
_RSP_WRITE = struct.Struct("<IBBHIBBH")  # header + status: a WRITE's OK reply
_RSP_READ = struct.Struct("<IBBHIBBHI")  # ... + the word: a READ's OK reply
_U32 = struct.Struct("<I")
_NODE = struct.Struct("<IIBBBBI")
_DETAIL = struct.Struct("<HBBHIIQI")     # length, flags, cause, reserved, addr, retries, bytes, fragments

SYSTEM_SOCKET = "/run/oetp/hub.sock"

_RECV_BUF = 1 << 16  # the receive buffer; larger replies get their own


def _user_socket():
    d = os.environ.get("XDG_RUNTIME_DIR")
    if d:
        return os.path.join(d, "oetp", "hub.sock")
    import tempfile
    return os.path.join(tempfile.gettempdir(), "oetp-%d" % os.geteuid(), "hub.sock")


def default_socket():
    """The socket a client uses when given none: $OETP_HUB, else
    /run/oetp/hub.sock if it exists, else the per-user socket
    ($XDG_RUNTIME_DIR/oetp/hub.sock or /tmp/oetp-UID/hub.sock)."""
    p = os.environ.get("OETP_HUB")
    if p:
        return p
    if os.path.exists(SYSTEM_SOCKET):
        return SYSTEM_SOCKET
    return _user_socket()


class Error(Exception):
    """Base class of the errors of this package. ``maybe_executed`` says
    whether the operation may have run at the device (or part of it):
    False means it certainly did not."""

    maybe_executed = False


class HubGone(Error):
    """The connection to the hub failed: it could not be made, or the hub
    closed it or died. ``maybe_executed`` is True when the request had
    reached the hub."""

    def __init__(self, message, maybe_executed=False):
        self.maybe_executed = maybe_executed
        super().__init__(message + ("; the operation may have executed" if maybe_executed else ""))


class Timeout(Error):
    """No reply from the hub within the operation's deadline (the hub is
    frozen or overloaded): the operation may have executed. The connection
    is closed: open another with :func:`connect`."""

    maybe_executed = True


class UntrustedSocketError(Error):
    """The hub socket, a directory above it, or the process serving it
    belongs to another user (or the socket's directory may be written by
    others), so someone other than your hub could answer. ``path`` is the
    socket, ``culprit`` the file or directory that failed the check, ``uid``
    its owner. Nothing was sent. Pass ``trust_any_owner=True`` (or set
    OETP_HUB_TRUST_ANY_OWNER=1) only for a socket shared on purpose."""

    def __init__(self, path, culprit, uid, why, fix):
        self.path = path
        self.culprit = culprit
        self.uid = uid
        super().__init__("%s is not safe to use: %s; %s" % (path, why, fix))


TRUST_ANY_OWNER_ENV = "OETP_HUB_TRUST_ANY_OWNER"
_SHARED_FIX = ("to use a socket shared on purpose, set %s=1 (Python: trust_any_owner=True), which lets "
               "whoever owns it or its directory answer in the hub's place" % TRUST_ANY_OWNER_ENV)


def _owner(uid):
    try:
        import pwd
        return "uid %d (%s)" % (uid, pwd.getpwuid(uid).pw_name)
    except (ImportError, KeyError):
        return "uid %d" % uid


def _trusted_owners():
    if os.geteuid() == 0:
        return "root (you)"
    return "you (%s) or root" % _owner(os.geteuid())


def _trusted(uid):
    return uid == 0 or uid == os.geteuid()


def check_socket(path):
    """Check that the hub socket at ``path`` may be trusted, as ssh and tmux
    check theirs: the socket and every directory above it are owned by root
    or by you, its directory is writable by no one else, and a directory
    above it that others may write is sticky (as /tmp). Raises
    :class:`UntrustedSocketError`, or FileNotFoundError when nothing is
    there."""
    import stat
    path_abs = os.path.abspath(path)
    st = os.lstat(path_abs)
    if not stat.S_ISSOCK(st.st_mode):
        what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else ("a directory" if stat.S_ISDIR(st.st_mode) else "a file")
        raise UntrustedSocketError(path, path_abs, st.st_uid, "it is %s owned by %s, not a socket" % (what, _owner(st.st_uid)),
                                   "give the socket's own path (links are not followed); " + _SHARED_FIX)
    if not _trusted(st.st_uid):
        raise UntrustedSocketError(
            path, path_abs, st.st_uid,
            "the socket is owned by %s, not by %s: that user, not your hub, would answer" % (_owner(st.st_uid), _trusted_owners()),
            "remove it if it is not a hub you meant to use, and start the hub again; " + _SHARED_FIX)
    _check_dirs(path, os.path.dirname(path_abs), True, 0)


def _check_dirs(path, d, first, depth):
    import stat
    if depth > 40:
        raise Error("%s: too many levels of symbolic links" % path)
    while True:
        st = os.lstat(d)
        if not _trusted(st.st_uid):
            raise UntrustedSocketError(
                path, d, st.st_uid,
                "%s is owned by %s, not by %s: that user could put another socket there"
                % (d, _owner(st.st_uid), _trusted_owners()),
                "remove %s if it is not yours and start the hub again; %s" % (d, _SHARED_FIX))
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(d)
            if not os.path.isabs(target):
                target = os.path.join(os.path.dirname(d), target)
            _check_dirs(path, os.path.normpath(target), first, depth + 1)
        elif st.st_mode & 0o022 and (first or not st.st_mode & stat.S_ISVTX):
            fix = "chmod go-w %s (as its owner)" % d
            if first:
                fix += ", or put the socket in a directory only you or root can write"
            raise UntrustedSocketError(
                path, d, st.st_uid,
                "%s may be written by others (mode %04o), who could replace the socket" % (d, st.st_mode & 0o7777),
                fix + "; " + _SHARED_FIX)
        first = False
        parent = os.path.dirname(d)
        if parent == d:
            return
        d = parent


def _check_peer(sock, path):
    """The process serving the socket (SO_PEERCRED: the one that listened)
    runs as root or as you."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return
    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i")))
    if not _trusted(uid):
        raise UntrustedSocketError(
            path, path, uid,
            "the process serving it (pid %d) runs as %s, not as %s" % (pid, _owner(uid), _trusted_owners()),
            "stop that process if it is not a hub you meant to use; " + _SHARED_FIX)


class OpError(Error):
    """A failed device operation, as the engine reported it through the hub.

    ``code`` is the CSR code (0..15), ``name`` its mnemonic (TIMEOUT,
    REMOTE_AXI_WR_SLVERR, ...), ``maybe_executed`` whether the operation may
    have run at the device (its outcome is unknown, or part of a block
    completed), ``outcome_unknown`` the engine's word on the failed try
    itself, ``addr`` the failed address (a block's failed fragment),
    ``bytes`` the block's bytes completed before the failure, ``op`` the
    operation ("RMEM read", "DMA write", ...), ``cause`` the engine's cause
    ("timeout", "memory", ...) and ``cause_text`` its message, ``index`` the
    failed operation's index in a batch (None outside one): the operations
    before it completed, the later ones did not run.
    """

    def __init__(self, code, message, maybe_executed=False, index=None, detail=None):
        self.code = code
        self.name = CODE_NAMES[code] if 0 <= code < 16 else "CODE_%d" % code
        self.message = message
        self.maybe_executed = maybe_executed
        self.index = index
        self.outcome_unknown = maybe_executed
        self.addr = self.bytes = self.fragments = self.retries = None
        self.op = self.cause = self.cause_text = None
        if detail is not None:
            (self.outcome_unknown, self.cause, self.addr, self.retries, self.bytes, self.fragments,
             self.op, self.cause_text) = detail
        text = message if self.name in message else "%s (%d): %s" % (self.name, code, message)
        if maybe_executed:
            text += " (the operation may have executed)"
        super().__init__(text)


class UsageError(Error, ValueError):
    """An argument out of range (an address of 2**32 or more, a value or mask
    wider than 32 bits, a negative number): refused before anything is sent,
    as the CLI refuses it. It is a :class:`ValueError` too."""


_MAX32 = 0xFFFFFFFF


def _check32(*named):
    """Raise UsageError for the first (name, value) pair that is not an
    integer 0..2**32-1."""
    for name, v in named:
        if isinstance(v, bool) or not isinstance(v, int):
            raise UsageError("%s must be an integer 0..0x%x, not %r" % (name, _MAX32, v))
        if not 0 <= v <= _MAX32:
            raise UsageError("%s = %s is out of range: use 0..0x%x (32 bits)" % (name, hex(v), _MAX32))


def _check_block(addr, n):
    """Raise UsageError unless addr is a 32-bit address and the n bytes from
    it end within the 4 GiB address space."""
    _check32(("addr", addr))
    if n < 0:
        raise UsageError("the length %d is negative" % n)
    if addr + n > _MAX32 + 1:
        raise UsageError("%d bytes from addr = 0x%x end past the 4 GiB address space (room for %d bytes)"
                         % (n, addr, _MAX32 + 1 - addr))


class HubError(Error):
    """A failure of the hub rather than of a device operation: ``status`` is
    the protocol status (0x80..), ``name`` its mnemonic (NO_DEVICE,
    BAD_MESSAGE, NO_NODE, AUTH, BUSY, ...). Nothing ran."""

    def __init__(self, status, message):
        self.status = status
        self.code = status
        self.name = HUB_ERRORS.get(status, "STATUS_0x%02x" % status)
        self.message = message
        super().__init__("%s: %s" % (self.name, message))


class Denied(HubError):
    """The device's access rules (the hub config's ``read`` and ``write``
    lists) refuse this client the operation: the message names the client
    and the rule. Nothing ran (``maybe_executed`` is False); ask the hub's
    administrator to add you to the rule."""


def _hub_error(status, message):
    return (Denied if status == DENIED else HubError)(status, message)


def _detail(body, off):
    """The error detail at ``body[off:]``: the OpError fields and the offset
    after it."""
    n, flags, cause, _, addr, retries, nbytes, frags = _DETAIL.unpack_from(body, off)
    end = off + 2 + n
    p = off + _DETAIL.size
    (m,) = struct.unpack_from("<H", body, p)
    op = bytes(body[p + 2:p + 2 + m]).decode("utf-8", "replace")
    p += 2 + m
    (m,) = struct.unpack_from("<H", body, p)
    cause_text = bytes(body[p + 2:p + 2 + m]).decode("utf-8", "replace")
    return (bool(flags & 1), CAUSE_NAMES.get(cause, "other"), addr, retries, nbytes, frags, op, cause_text), end


def connect(path=None, token=None, timeout=None, trust_any_owner=False):
    """Connect to the hub at ``path``: a Unix socket path or tcp://HOST:PORT
    (default: :func:`default_socket`). ``token`` is the shared secret for TCP
    (default $OETP_HUB_TOKEN). ``timeout`` is every operation's deadline in
    seconds; the default (None) derives it from the device: its timeout and
    retries per fragment, plus a margin (:data:`DEADLINE_MARGIN`). An
    operation past its deadline raises :class:`Timeout`. A Unix socket is
    checked first (:func:`check_socket`, and the serving process's user):
    ``trust_any_owner=True`` or OETP_HUB_TRUST_ANY_OWNER=1 skips that, for a
    socket shared on purpose only: whoever owns it can answer in the hub's
    place."""
    return Hub(path, token=token, timeout=timeout, trust_any_owner=trust_any_owner)


class Hub:
    """A connection to the hub. Safe to share between threads: requests are
    serialised on the connection."""

    def __init__(self, path=None, token=None, timeout=None, trust_any_owner=False):
        self.path = path or default_socket()
        trust_any_owner = trust_any_owner or os.environ.get(TRUST_ANY_OWNER_ENV) == "1"
        self.timeout = timeout
        self._sent = False
        self._dead = False
        try:
            if self.path.startswith("tcp://"):
                host, _, port = self.path[len("tcp://"):].rpartition(":")
                self._sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout or 5)
                self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if token is None:
                    token = os.environ.get("OETP_HUB_TOKEN", "")
            else:
                if not trust_any_owner:
                    check_socket(self.path)
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self._sock.settimeout(timeout or 5)
                try:
                    self._sock.connect(self.path)
                    if not trust_any_owner:
                        _check_peer(self._sock, self.path)
                except (OSError, Error):
                    self._sock.close()
                    raise
        except OSError as e:
            raise HubGone("cannot connect to the hub at %s: %s" % (self.path, e)) from None
        self._deadline = timeout or 5
        # Replies are received straight into one buffer with recv_into (no
        # file object: its Python-level readinto cost more than the
        # syscall); a reply larger than the buffer gets its own.
        self._buf = bytearray(_RECV_BUF)
        self._mv = memoryview(self._buf)
        self._pending = 0  # bytes of the next reply already in _buf
        self._lock = threading.Lock()
        self._tag = 0
        tok = (token or "").encode()
        if self.path.startswith("tcp://"):
            # The hub proves it holds the token before anything else is
            # sent; HELLO then proves this client holds it, without it.
            tok = self._challenge(tok, timeout or 5)
        res = self._call(HELLO, 0, struct.pack("<HH", VERSION, len(tok)) + tok, deadline=timeout or 5)
        self.version, self.max_message, self.ndevices = struct.unpack_from("<HIH", res)
        self.netns = struct.unpack_from("<Q", res, 8)[0] if len(res) >= 16 else 0

    def _challenge(self, token, deadline):
        """CHALLENGE the server with a fresh nonce and check its proof that
        it holds ``token``; returns what HELLO carries instead of it."""
        import hashlib
        import hmac
        cn = os.urandom(NONCE_LEN)
        try:
            res = bytes(self._call(CHALLENGE, 0, cn, deadline=deadline))
        except HubError as e:
            if e.status == AUTH:
                raise
            res = b""
        if len(res) != 2 * NONCE_LEN or not hmac.compare_digest(
                res[NONCE_LEN:], hmac.new(token, b"oetp hub proof\x00" + cn + res[:NONCE_LEN], hashlib.sha256).digest()):
            self._broken()
            raise HubError(AUTH, "the server at %s did not prove it holds the token ($OETP_HUB_TOKEN): either the token "
                           "is not this hub's, or another program answers at that address; the token was not sent" % self.path)
        return b"proof:" + hmac.new(token, b"oetp client proof\x00" + cn + res[:NONCE_LEN], hashlib.sha256).hexdigest().encode()

    def close(self):
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # The exchange: one request, one reply, in order.

    def _next_tag(self):
        self._tag = (self._tag + 1) & 0xFFFFFFFF or 1
        return self._tag

    def _keep(self, n):
        """Leave the ``n`` bytes a fast path received in the buffer for
        _recv; none: the hub closed the connection after the request."""
        if not n:
            self._broken()
            raise HubGone("the hub closed the connection", True)
        self._pending = n

    def _recv(self, tag, parts=None):
        """The reply to request ``tag``: its result bytes (a memoryview of a
        buffer of its own). Raises OpError or HubError for a failure. With
        ``parts`` (a bytearray), the data of the PARTIAL replies of a
        streamed READ_BLOCK are appended to it until the last reply."""
        while True:
            typ, status, flags, mlen, body = self._recv_one(tag)
            if parts is None or status or flags != FLAG_PARTIAL or mlen:
                break
            parts += body[4:]
        if status:
            msg = bytes(body[4:4 + mlen]).decode("utf-8", "replace")
            off = 4 + mlen
            detail = None
            if flags & FLAG_DETAIL:
                detail, off = _detail(body, off)
            res = body[off:]
            if status < 16:
                raise OpError(status, msg, bool(flags & FLAG_MAYBE_EXECUTED), detail=detail)._with(res)
            raise _hub_error(status, msg)
        return memoryview(body)[4 + mlen:]

    def _recv_one(self, tag):
        """One reply to request ``tag``: type, status, flags, message length
        and body."""
        sock, mv = self._sock, self._mv
        n = self._pending
        while n < 12:
            m = sock.recv_into(mv[n:])
            if not m:
                self._broken()
                raise HubGone("the hub closed the connection", self._sent)
            n += m
        length, typ, _, _, rtag = _HDR.unpack_from(mv)
        if length < 12:
            self._broken()
            raise HubGone("protocol error: reply of length %d" % length, self._sent)
        total = length + 4
        if total <= len(mv):
            while n < total:
                m = sock.recv_into(mv[n:])
                if not m:
                    self._broken()
                    raise HubGone("the hub closed the connection mid-reply", self._sent)
                n += m
            body = mv[12:total].tobytes()
            if n > total:  # the start of another reply (not expected)
                mv[:n - total] = mv[total:n].tobytes()
            self._pending = n - total
        else:
            big = bytearray(total - 12)
            bmv = memoryview(big)
            bmv[:n - 12] = mv[12:n]
            got = n - 12
            while got < len(big):
                m = sock.recv_into(bmv[got:])
                if not m:
                    self._broken()
                    raise HubGone("the hub closed the connection mid-reply", self._sent)
                got += m
            self._pending = 0
            body = bmv
        status, flags, mlen = _STATUS.unpack_from(body)
        if rtag == NOTICE_TAG and status:
            # The hub's notice before it closes the connection: the request
            # was not read.
            self._sent = False
            self._broken()
            raise _hub_error(status, bytes(body[4:4 + mlen]).decode("utf-8", "replace"))
        if rtag != tag or not typ & 0x80:
            self._broken()
            raise HubGone("protocol error: reply tag %d to request %d" % (rtag, tag), self._sent)
        return typ, status, flags, mlen, body

    def _call(self, typ, handle, body=b"", deadline=None):
        with self._lock:
            self._begin(deadline or self._deadline)
            try:
                tag = self._next_tag()
                self._sock.sendall(_HDR.pack(8 + len(body), typ, 0, handle, tag) + body)
                self._sent = True
                return self._recv(tag)
            except OSError as e:
                raise self._failed(e) from None

    def _begin(self, deadline):
        """Start an operation whose deadline is ``deadline`` seconds (None:
        none); the lock is held."""
        self._sent = False
        if self._dead:
            raise HubGone("the connection to the hub at %s was lost earlier: connect again" % self.path)
        self._sock.settimeout(deadline)

    def _failed(self, e):
        """The package's error for a socket error ``e`` of the operation in
        progress: the connection is unusable from here on."""
        self._broken()
        if isinstance(e, socket.timeout):
            return Timeout("no reply from the hub at %s within the operation's deadline of %.3gs; "
                           "the operation may have executed" % (self.path, self._sock.gettimeout() or 0))
        return HubGone("the connection to the hub at %s failed: %s" % (self.path, e), self._sent)

    def _broken(self):
        self._dead = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def device(self, name):
        """Open the device the hub knows by ``name``."""
        res = self._call(OPEN, 0, b"\x00" + name.encode())
        return Device(self, res)

    def status(self):
        """The hub's status and counters, as a dict."""
        import json
        return json.loads(bytes(self._call(STATUS, 0)).decode())

    def group_write(self, name, addr, data, verify=False):
        """Write ``data`` at ``addr`` to every device of the hub's group
        ``name`` with one group DMA write, paced at the slowest member's
        measured time per fragment; with ``verify=True`` the hub then reads
        every member back and rewrites by unicast the fragments that differ
        (docs/replication.md). Returns the result as a dict: ``members``
        (each with ``device``, ``state`` verified/repaired/failed,
        ``fragments_repaired`` and ``repaired``), ``pacing`` (with the
        checks between runs: ``checks_us``, ``raised_to_us``), ``delivery``.
        A member that could not be verified raises :class:`OpError` naming
        it, with the result in ``.result``."""
        import json
        data = memoryview(data).cast("B")
        if len(data) > MAX_BLOCK:
            raise UsageError("a block of %d bytes exceeds %d; split it" % (len(data), MAX_BLOCK))
        _check_block(addr, len(data))
        name = name.encode()
        body = struct.pack("<BH", 1 if verify else 0, len(name)) + name + _U32.pack(addr)
        with self._lock:
            tag = self._next_tag()
            self._sock.sendall(_HDR.pack(8 + len(body) + len(data), GROUP_WRITE, 0, 0, tag) + body)
            self._sock.sendall(data)
            try:
                res = self._recv(tag)
            except OpError as e:
                e.result = json.loads(bytes(e._result).decode()) if len(e._result) else None
                raise
        return json.loads(bytes(res).decode())


def _mac(b):
    return ":".join("%02x" % x for x in b)


class Device:
    """A device opened through the hub."""

    def __init__(self, hub, res):
        self._hub = hub
        self.handle, caps = struct.unpack_from("<HB", res)
        off = 4
        self.local = {}
        for kind in ("rmem", "dma_write", "dma_read"):
            self.local[kind] = _mac(res[off:off + 6])
            off += 6
        self.mac = _mac(res[off:off + 6])
        off += 6
        (n,) = struct.unpack_from("<H", res, off)
        self.name = bytes(res[off + 2:off + 2 + n]).decode()
        off += 2 + n
        (n,) = struct.unpack_from("<H", res, off)
        self.iface = bytes(res[off + 2:off + 2 + n]).decode()
        off += 2 + n
        self.has_table = bool(caps & 1)
        # The device's bound for one operation or fragment (seconds; 0: it
        # waits forever) and its DMA fragment size, for the deadlines.
        self.bound, self.max_fragment = 1.0, 1024
        if len(res) >= off + 8:
            ms, self.max_fragment = struct.unpack_from("<II", res, off)
            self.bound = ms / 1000.0

    def deadline(self, n=0):
        """The deadline in seconds of an operation on ``n`` block bytes (None:
        none): the connection's ``timeout`` if given, else the margin plus
        the device's bound for every fragment and one more."""
        if self._hub.timeout is not None:
            return self._hub.timeout
        if not self.bound:
            return None
        frags = 1 + (-(-n // self.max_fragment) if n and self.max_fragment else 0)
        return DEADLINE_MARGIN + frags * self.bound

    def __repr__(self):
        return "<oetp.Device %s %s on %s>" % (self.name, self.mac, self.iface)

    # read and write take a fast path for the common reply (OK, no message,
    # received whole by one recv_into): one unpack checks all of it. Any
    # other reply goes through Hub._recv with the bytes received so far.

    def read(self, addr):
        """Read the 32-bit word at byte address ``addr`` (RMEM)."""
        if addr.__class__ is not int or not 0 <= addr <= _MAX32:
            _check32(("addr", addr))
        h = self._hub
        with h._lock:
            h._begin(self.deadline())
            tag = h._next_tag()
            try:
                h._sock.sendall(_REQ_READ.pack(12, READ, 0, self.handle, tag, addr))
                h._sent = True
                if not h._pending:
                    n = h._sock.recv_into(h._buf)
                    if n == 20:
                        length, typ, _, _, rtag, status, _, mlen, value = _RSP_READ.unpack_from(h._buf)
                        if length == 16 and typ == READ | 0x80 and rtag == tag and not status and not mlen:
                            return value
                    h._keep(n)
                res = h._recv(tag)
            except OSError as e:
                raise h._failed(e) from None
        return _U32.unpack_from(res)[0]

    def write(self, addr, value, mask=0xFFFFFFFF):
        """Write the bits of ``value`` selected by ``mask`` into the word at
        ``addr``: one masked RMEM write (oETP's BitEnable). ``addr``,
        ``value`` and ``mask`` are 0..2**32-1: a wider or negative one raises
        :class:`UsageError` (a ValueError), never a truncated write."""
        if not (addr.__class__ is int and value.__class__ is int and mask.__class__ is int
                and 0 <= addr <= _MAX32 and 0 <= value <= _MAX32 and 0 <= mask <= _MAX32):
            _check32(("addr", addr), ("value", value), ("mask", mask))
        h = self._hub
        with h._lock:
            h._begin(self.deadline())
            tag = h._next_tag()
            try:
                h._sock.sendall(_REQ_WRITE.pack(20, WRITE, 0, self.handle, tag, addr, value, mask))
                h._sent = True
                if not h._pending:
                    n = h._sock.recv_into(h._buf)
                    if n == 16:
                        length, typ, _, _, rtag, status, _, mlen = _RSP_WRITE.unpack_from(h._buf)
                        if length == 12 and typ == WRITE | 0x80 and rtag == tag and not status and not mlen:
                            return
                    h._keep(n)
                h._recv(tag)
            except OSError as e:
                raise h._failed(e) from None

    def read_block(self, addr, n):
        """Read ``n`` bytes at ``addr`` by DMA; returns bytes."""
        if n > MAX_BLOCK:
            raise UsageError("a block of %d bytes exceeds %d; split it" % (n, MAX_BLOCK))
        _check_block(addr, n)
        h = self._hub
        with h._lock:
            h._begin(self.deadline(n))
            try:
                tag = h._next_tag()
                h._sock.sendall(_REQ_RBLK.pack(16, READ_BLOCK, 0, self.handle, tag, addr, n))
                h._sent = True
                # A large block comes in pieces as its fragments complete.
                data = bytearray()
                res = h._recv(tag, data)
            except OSError as e:
                raise h._failed(e) from None
        data += res[8:]
        if len(data) != n:
            h._broken()
            raise HubGone("protocol error: READ_BLOCK reply of %d bytes for %d" % (len(data), n), True)
        return bytes(data)

    def write_block(self, addr, data):
        """Write the bytes ``data`` at ``addr`` by DMA."""
        data = memoryview(data).cast("B")
        if len(data) > MAX_BLOCK:
            raise UsageError("a block of %d bytes exceeds %d; split it" % (len(data), MAX_BLOCK))
        _check_block(addr, len(data))
        h = self._hub
        with h._lock:
            h._begin(self.deadline(len(data)))
            try:
                tag = h._next_tag()
                h._sock.sendall(_REQ_READ.pack(12 + len(data), WRITE_BLOCK, 0, self.handle, tag, addr))
                # The hub streams a large block into the DMA write as it
                # arrives: from here on part of it may be written.
                h._sent = True
                h._sock.sendall(data)
                h._recv(tag)
            except OSError as e:
                raise h._failed(e) from None

    def node(self, name):
        """The address-table node ``name`` (a dotted path, as uHAL's getNode)."""
        res = self._hub._call(NODE_INFO, self.handle, name.encode())
        node, _ = _parse_node(res, 0)
        return Node(self, **node)

    def nodes(self):
        """Every node of the address table, in address order."""
        res = self._hub._call(NODES, self.handle)
        (n,) = _U32.unpack_from(res)
        off = 4
        out = []
        for _ in range(n):
            node, off = _parse_node(res, off)
            out.append(Node(self, **node))
        return out

    @property
    def regs(self):
        """Attribute access over the device's address table (the hub's):
        ``dev.regs.ctrl.enable.write(1)``, ``dev.regs.status.read()``,
        ``dev.regs.scratch[2].read()``; see :class:`oetp.Regs`."""
        r = self.__dict__.get("_regs")
        if r is None:
            if not self.has_table:
                raise UsageError("the hub has no address table for device %r: give it one (address_table in the devices file or the hub's config)" % self.name)
            from ._regs import Regs
            r = self.__dict__["_regs"] = Regs.build(self.nodes())
        return r

    def batch(self):
        """A batch: ``with dev.batch() as b: r = b.read(a)``; the operations run
        back to back in one round trip when the block ends, stopping at the
        first failure (which raises OpError with ``.index``)."""
        return Batch(self)


def _parse_node(res, off):
    addr, mask, perm, mode, flags, words, size = _NODE.unpack_from(res, off)
    off += _NODE.size
    (n,) = struct.unpack_from("<H", res, off)
    name = bytes(res[off + 2:off + 2 + n]).decode()
    off += 2 + n
    (n,) = struct.unpack_from("<H", res, off)
    desc = bytes(res[off + 2:off + 2 + n]).decode()
    off += 2 + n
    return dict(name=name, address=addr, mask=mask, permission=PERMISSIONS.get(perm, str(perm)),
                mode=MODES.get(mode, str(mode)), size=size, description=desc,
                volatile=bool(flags & 1), words=words), off


class Node:
    """A named node: ``read()`` returns its field shifted down, ``write(v)``
    shifts ``v`` up into the mask and writes it with one masked RMEM write.
    Permissions are enforced by the hub (OpError LOCAL_INVALID).

    ``volatile`` is True for a node whose accesses have side effects (a port,
    a non-incremental node, a TOML ``volatile = true`` node): the hub never
    retries them. ``words`` is the number of 32-bit words a register value
    spans (1, or n for a multi-word LiteX CSR; 0 from a hub too old to say)."""

    def __init__(self, dev, name, address, mask, permission, mode, size, description,
                 volatile=False, words=0):
        self._dev = dev
        self.volatile = volatile
        self.words = words
        self.name = name
        self.address = address
        self.mask = mask
        self.permission = permission
        self.mode = mode
        self.size = size
        self.description = description

    def __repr__(self):
        return "<oetp.Node %s @0x%08x mask 0x%08x %s %s%s>" % (self.name, self.address, self.mask, self.permission, self.mode,
                                                            " volatile" if self.volatile else "")

    def read(self):
        """The node's value: its field shifted down (a multi-word LiteX CSR's
        words joined, most significant first)."""
        res = self._dev._hub._call(NODE_READ, self._dev.handle, self.name.encode(), deadline=self._dev.deadline())
        return int.from_bytes(bytes(res), "little")

    def write(self, value):
        """Write ``value`` into the node: one masked RMEM write for a field."""
        if value < 0:
            raise UsageError("node values are unsigned")
        n = max(4, 4 * ((value.bit_length() + 31) // 32))
        self._dev._hub._call(NODE_WRITE, self._dev.handle, deadline=self._dev.deadline(), body=
                             struct.pack("<H", n) + value.to_bytes(n, "little") + self.name.encode())

    def read_block(self, n=None):
        """Read a block node: ``n`` bytes (default its size) by DMA."""
        return self._dev.read_block(self.address, self.size if n is None else n)

    def write_block(self, data):
        self._dev.write_block(self.address, data)


class Result:
    """The outcome of a batched operation: ``value`` (an int for a read,
    bytes for a block read, None for writes) once ``done``."""

    __slots__ = ("kind", "n", "value", "done")

    def __init__(self, kind, n=0):
        self.kind = kind
        self.n = n
        self.value = None
        self.done = False

    def __repr__(self):
        return "<oetp.Result done=%s value=%r>" % (self.done, self.value)


_OP_READ = struct.Struct("<BI")
_OP_WRITE = struct.Struct("<BIII")
_OP_BLOCK = struct.Struct("<BII")


def _batch_read_too_large(n):
    # The hub's message (hub/proto BatchReadTooLarge).
    return ("BATCH reads %d block bytes, more than the %d bytes a batch's block reads may total; "
            "read larger blocks with a plain block read (READ_BLOCK), which streams" % (n, MAX_BATCH_READ))


class Batch:
    """Operations collected and run in one BATCH request (see Device.batch)."""

    def __init__(self, dev):
        self._dev = dev
        self._buf = bytearray(4)
        self._results = []
        self._reads = 0

    def __len__(self):
        return len(self._results)

    def read(self, addr):
        _check32(("addr", addr))
        self._buf += _OP_READ.pack(READ, addr)
        r = Result(READ)
        self._results.append(r)
        return r

    def write(self, addr, value, mask=0xFFFFFFFF):
        _check32(("addr", addr), ("value", value), ("mask", mask))
        self._buf += _OP_WRITE.pack(WRITE, addr, value, mask)
        r = Result(WRITE)
        self._results.append(r)
        return r

    def read_block(self, addr, n):
        _check_block(addr, n)
        self._buf += _OP_BLOCK.pack(READ_BLOCK, addr, n)
        self._reads += n
        r = Result(READ_BLOCK, n)
        self._results.append(r)
        return r

    def write_block(self, addr, data):
        data = memoryview(data).cast("B")
        _check_block(addr, len(data))
        self._buf += _OP_BLOCK.pack(WRITE_BLOCK, addr, len(data))
        self._buf += data
        r = Result(WRITE_BLOCK)
        self._results.append(r)
        return r

    def run(self):
        """Send the batch and fill the results; raises OpError on failure.
        A batch whose block reads total more than MAX_BATCH_READ bytes is
        refused before anything is sent (HubError TOO_LARGE): read such
        blocks with Device.read_block, which streams."""
        if self._reads > MAX_BATCH_READ:
            raise HubError(TOO_LARGE, _batch_read_too_large(self._reads))
        body = self._buf
        _U32.pack_into(body, 0, len(self._results))
        self._buf = bytearray(4)
        try:
            res = self._dev._hub._call(BATCH, self._dev.handle, body, deadline=self._dev.deadline(len(body)))
            err = None
        except OpError as e:
            res, err = e._result, e
        done, failed = struct.unpack_from("<II", res)
        off = 8
        unpack = _U32.unpack_from
        for r in self._results[:done]:
            if r.kind == READ:
                (r.value,) = unpack(res, off)
                off += 4
            elif r.kind == READ_BLOCK:
                (n,) = _U32.unpack_from(res, off)
                r.value = bytes(res[off + 4:off + 4 + n])
                off += 4 + n
            r.done = True
        if err is not None:
            err.index = failed
            raise err

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.run()
        return False


def _with(self, res):
    self._result = res
    return self


OpError._with = _with
OpError._result = b""
