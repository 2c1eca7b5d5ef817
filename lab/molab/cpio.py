"""A small deterministic writer for "newc" cpio archives (the initramfs format).

Entries are written sorted, with mtime 0 and owner root, so the same inputs
give the same bytes. Device nodes can be added without being root.
"""

import gzip
import io
import os
import stat
from pathlib import Path, PurePosixPath


class Archive:
    def __init__(self):
        self.entries = {}   # path -> (mode, data bytes, rdev (major, minor))

    @staticmethod
    def _norm(path):
        p = str(PurePosixPath("/") / str(path)).lstrip("/")
        if not p or p.startswith("..") or "/../" in f"/{p}/":
            raise ValueError(f"bad archive path {path!r}")
        return p

    def _parents(self, p):
        parts = p.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in self.entries:
                self.entries[d] = (stat.S_IFDIR | 0o755, b"", (0, 0))

    def add_dir(self, path, mode=0o755):
        p = self._norm(path)
        self._parents(p)
        self.entries[p] = (stat.S_IFDIR | (mode & 0o7777), b"", (0, 0))

    def add_file(self, path, data, mode=0o644):
        p = self._norm(path)
        self._parents(p)
        if isinstance(data, str):
            data = data.encode()
        self.entries[p] = (stat.S_IFREG | (mode & 0o7777), bytes(data), (0, 0))

    def add_symlink(self, path, target):
        p = self._norm(path)
        self._parents(p)
        self.entries[p] = (stat.S_IFLNK | 0o777, str(target).encode(), (0, 0))

    def add_chardev(self, path, major, minor, mode=0o600):
        p = self._norm(path)
        self._parents(p)
        self.entries[p] = (stat.S_IFCHR | (mode & 0o7777), b"", (major, minor))

    def add_host_file(self, path, src, mode=None):
        src = Path(src)
        st = src.stat()
        self.add_file(path, src.read_bytes(), mode if mode is not None else stat.S_IMODE(st.st_mode))

    def add_tree(self, src_dir, dest):
        """Copy a host directory tree (files, dirs, symlinks) below ``dest``."""
        src_dir = Path(src_dir)
        for root, dirs, files in os.walk(src_dir):
            dirs.sort()
            rroot = Path(root)
            relroot = rroot.relative_to(src_dir)
            self.add_dir(PurePosixPath(dest) / relroot, stat.S_IMODE(rroot.stat().st_mode))
            for name in sorted(files) + [d for d in dirs if (rroot / d).is_symlink()]:
                f = rroot / name
                target = PurePosixPath(dest) / relroot / name
                if f.is_symlink():
                    self.add_symlink(target, os.readlink(f))
                elif f.is_file():
                    self.add_host_file(target, f)

    def __contains__(self, path):
        return self._norm(path) in self.entries

    def to_bytes(self):
        buf = io.BytesIO()
        ino = 1
        for name in sorted(self.entries):
            mode, data, (rmaj, rmin) = self.entries[name]
            _write_entry(buf, name, ino, mode, data, rmaj, rmin,
                         nlink=2 if stat.S_ISDIR(mode) else 1)
            ino += 1
        _write_entry(buf, "TRAILER!!!", 0, 0, b"", 0, 0, nlink=1)
        out = buf.getvalue()
        pad = (-len(out)) % 512
        return out + b"\0" * pad

    def write_gz(self, path):
        data = self.to_bytes()
        path = Path(path)
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        with open(tmp, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
                gz.write(data)
        tmp.replace(path)
        return path


def _write_entry(buf, name, ino, mode, data, rmaj, rmin, nlink):
    nameb = name.encode() + b"\0"
    fields = [ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rmaj, rmin, len(nameb), 0]
    buf.write(b"070701" + b"".join(b"%08X" % f for f in fields))
    buf.write(nameb)
    buf.write(b"\0" * ((-(110 + len(nameb))) % 4))
    buf.write(data)
    buf.write(b"\0" * ((-len(data)) % 4))


def read_newc(data):
    """Parse an uncompressed newc archive into {name: (mode, bytes)} (for tests)."""
    out = {}
    off = 0
    while off < len(data):
        if data[off:off + 6] != b"070701":
            break
        f = [int(data[off + 6 + 8 * i: off + 14 + 8 * i], 16) for i in range(13)]
        namesize, filesize, mode = f[11], f[6], f[1]
        name = data[off + 110: off + 110 + namesize - 1].decode()
        off += 110 + namesize
        off += (-off) % 4
        body = data[off: off + filesize]
        off += filesize
        off += (-off) % 4
        if name == "TRAILER!!!":
            break
        out[name] = (mode, body)
    return out


def append_overlay(base_initrd, archive, dest):
    """Write ``base_initrd`` followed by an uncompressed archive (the kernel
    unpacks concatenated cpio archives; later files replace earlier ones)."""
    base = Path(base_initrd).read_bytes()
    base += b"\0" * ((-len(base)) % 4)
    dest = Path(dest)
    dest.write_bytes(base + archive.to_bytes())
    return dest
