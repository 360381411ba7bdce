"""A minimal PEP 517 / PEP 660 build backend using only the standard library.

It builds a pure-Python wheel of the ``oetp`` package (and an sdist), so that
``pip install ./python`` works without a package index. Metadata comes from
pyproject.toml's [project] name, version, description and requires-python.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PKG = "oetp"


def _project():
    with open(os.path.join(_ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("[project]", 1)[1]
    section = section.split("\n[", 1)[0]
    meta = {}
    for key in ("name", "version", "description", "requires-python"):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(key), section, re.M)
        if m:
            meta[key] = m.group(1)
    return meta


def _metadata():
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % p["name"],
        "Version: %s" % p["version"],
        "Summary: %s" % p.get("description", ""),
    ]
    if "requires-python" in p:
        lines.append("Requires-Python: %s" % p["requires-python"])
    readme = os.path.join(_ROOT, "README.md")
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _dist_info():
    p = _project()
    return "%s-%s.dist-info" % (p["name"], p["version"])


def _wheel_name():
    p = _project()
    return "%s-%s-py3-none-any.whl" % (p["name"], p["version"])


def _files():
    base = os.path.join(_ROOT, _PKG)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for fn in sorted(filenames):
            if fn.endswith(".py") or fn == "py.typed":
                full = os.path.join(dirpath, fn)
                yield full, os.path.relpath(full, _ROOT).replace(os.sep, "/")


def _record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arc, digest, len(data))


def _write_wheel(wheel_directory, entries):
    di = _dist_info()
    path = os.path.join(wheel_directory, _wheel_name())
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in entries:
            z.writestr(arc, data)
            record.append(_record_line(arc, data))
        meta = _metadata().encode("utf-8")
        wheel = b"Wheel-Version: 1.0\nGenerator: oetp_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        for name, data in (("METADATA", meta), ("WHEEL", wheel)):
            arc = di + "/" + name
            z.writestr(arc, data)
            record.append(_record_line(arc, data))
        record.append(di + "/RECORD,,")
        z.writestr(di + "/RECORD", "\n".join(record) + "\n")
    return os.path.basename(path)


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    di = os.path.join(metadata_directory, _dist_info())
    os.makedirs(di, exist_ok=True)
    with open(os.path.join(di, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(di, "WHEEL"), "w", encoding="utf-8") as f:
        f.write("Wheel-Version: 1.0\nGenerator: oetp_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    entries = []
    for full, arc in _files():
        with open(full, "rb") as f:
            entries.append((arc, f.read()))
    return _write_wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    pth = (_ROOT + "\n").encode("utf-8")
    return _write_wheel(wheel_directory, [("oetp_editable.pth", pth)])


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = "%s-%s" % (p["name"], p["version"])
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz") as t:
        names = ["pyproject.toml", "README.md", "_build/oetp_backend.py"]
        names += [arc for _, arc in _files()]
        for arc in names:
            full = os.path.join(_ROOT, arc)
            if os.path.exists(full):
                t.add(full, arcname=base + "/" + arc)
        pkg = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (p["name"], p["version"])).encode()
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(pkg)
        t.addfile(info, io.BytesIO(pkg))
    return os.path.basename(path)
