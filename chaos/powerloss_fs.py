"""A FUSE passthrough file system that forgets every write not yet made durable: a power loss.

``python -m chaos.powerloss_fs BACKING MOUNTPOINT`` mounts BACKING at MOUNTPOINT (root only;
libfuse 3 mounts directly, no fusermount needed). A broker whose store lies under MOUNTPOINT
works as on a disk, but the data it writes, by ``write``/``pwrite`` or through a shared
``mmap`` (the kernel hands dirty mapped pages to this daemon as writes), stays in this
process's memory until a ``fsync``, ``fdatasync`` or ``msync(MS_SYNC)`` of that file
(FUSE_FSYNC) copies it into BACKING and fsyncs it there. Killing this daemon with SIGKILL (the
campaign kills the broker with it) is then a power loss: BACKING holds exactly what was synced.

The model, and where it is kinder or harsher than a real disk:

- Data: a page reaches BACKING only through a sync of its file; unsynced pages are lost
  whole. A real disk may also have written some of them back already (the kernel writes
  dirty pages after ~30 s, or under memory pressure), so it loses a subset of what this
  layer loses. Within a sync everything lands: no torn sector inside a synced range.
- Metadata (create, mkdir, unlink, rename, truncate, fallocate, chmod) is applied to BACKING
  at once, as if the journal committed it immediately (ext4 commits it within 5 s). A file
  grown by ``write`` alone keeps its old size until synced, as with delayed allocation.
- A rename that replaces an existing file first syncs the renamed file's data, as ext4's
  default ``auto_da_alloc`` does; a rename onto a new name does not.
- ``fsyncdir`` is a no-op (metadata is already durable).

One daemon thread serves every request (``nothreads``), so no locking is needed here.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

import mfusepy

PAGE = 4096


class _Pending:
    """What a file holds beyond BACKING: dirty pages and its size as the writer sees it."""

    __slots__ = ("pages", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.pages: dict[int, bytearray] = {}


class PowerLossFs(mfusepy.Operations):  # type: ignore[misc]
    """Passthrough to ``backing`` with file data held until its file is synced."""

    use_ns = True

    def __init__(self, backing: str) -> None:
        self.backing = os.path.realpath(backing)
        self.pending: dict[str, _Pending] = {}
        self.synced_pages = 0
        self.syncs = 0

    def _real(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    # ---- file data ----------------------------------------------------------------------

    def _commit(self, path: str, fd: int | None = None) -> None:
        """Apply ``path``'s pending pages to BACKING and sync it there."""
        p = self.pending.pop(path, None)
        own = fd is None
        if own:
            fd = os.open(self._real(path), os.O_RDWR)
        assert fd is not None
        try:
            if p is not None:
                for n in sorted(p.pages):
                    keep = min(PAGE, p.size - n * PAGE)
                    if keep > 0:
                        os.pwrite(fd, bytes(p.pages[n][:keep]), n * PAGE)
                if os.fstat(fd).st_size < p.size:
                    os.ftruncate(fd, p.size)
                self.synced_pages += len(p.pages)
            os.fdatasync(fd)
            self.syncs += 1
        finally:
            if own:
                os.close(fd)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        p = self.pending.get(path)
        if p is None:
            p = self.pending[path] = _Pending(os.fstat(fh).st_size)
        view = memoryview(data)
        pos, done = offset, 0
        while done < len(data):
            n, at = divmod(pos, PAGE)
            take = min(PAGE - at, len(data) - done)
            page = p.pages.get(n)
            if page is None:
                page = bytearray(os.pread(fh, PAGE, n * PAGE).ljust(PAGE, b"\0"))
                p.pages[n] = page
            page[at : at + take] = view[done : done + take]
            pos += take
            done += take
        p.size = max(p.size, offset + len(data))
        return len(data)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        p = self.pending.get(path)
        if p is None:
            return os.pread(fh, size, offset)
        end = min(offset + size, p.size)
        if offset >= end:
            return b""
        out = bytearray(os.pread(fh, end - offset, offset).ljust(end - offset, b"\0"))
        for n in range(offset // PAGE, (end - 1) // PAGE + 1):
            page = p.pages.get(n)
            if page is None:
                continue
            lo, hi = max(offset, n * PAGE), min(end, (n + 1) * PAGE)
            out[lo - offset : hi - offset] = page[lo - n * PAGE : hi - n * PAGE]
        return bytes(out)

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        del datasync
        self._commit(path, fh)
        return 0

    def flush(self, path: str, fh: int) -> int:
        return 0  # close(2) does not make data durable

    # ---- metadata, applied at once -------------------------------------------------------

    def _resize(self, path: str, length: int) -> None:
        p = self.pending.get(path)
        if p is None:
            return
        last = -(-length // PAGE)
        for n in [n for n in p.pages if n >= last]:
            del p.pages[n]
        tail = p.pages.get(length // PAGE)
        if tail is not None:
            cut = length % PAGE
            tail[cut:] = bytes(PAGE - cut)
        p.size = length

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._real(path), length)
        self._resize(path, length)
        return 0

    def fallocate(self, path: str, mode: int, offset: int, size: int, fh: int) -> int:
        if mode != 0:
            raise mfusepy.FuseOSError(errno.EOPNOTSUPP)
        os.posix_fallocate(fh, offset, size)
        p = self.pending.get(path)
        if p is not None:
            p.size = max(p.size, offset + size)
        return 0

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        st = os.lstat(self._real(path))
        attrs = {
            key: getattr(st, key)
            for key in (
                "st_mode",
                "st_nlink",
                "st_uid",
                "st_gid",
                "st_size",
                "st_ino",
                "st_atime_ns",
                "st_mtime_ns",
                "st_ctime_ns",
                "st_blocks",
            )
        }
        for key in ("st_atime", "st_mtime", "st_ctime"):
            attrs[key] = attrs.pop(key + "_ns")
        p = self.pending.get(path)
        if p is not None:
            attrs["st_size"] = p.size
        return attrs

    def _open_flags(self, flags: int) -> int:
        drop = os.O_ACCMODE | os.O_APPEND | os.O_TRUNC | os.O_CREAT | os.O_EXCL
        drop |= getattr(os, "O_DIRECT", 0)
        return (flags & ~drop) | os.O_RDWR

    def open(self, path: str, flags: int) -> int:
        fd = os.open(self._real(path), self._open_flags(flags))
        if flags & os.O_TRUNC:
            os.ftruncate(fd, 0)
            self._resize(path, 0)
        return fd

    def create(self, path: str, mode: int, fi: Any = None) -> int:
        flags = fi if isinstance(fi, int) else 0
        fd = os.open(self._real(path), os.O_RDWR | os.O_CREAT | (flags & os.O_EXCL), mode)
        if flags & os.O_TRUNC:
            os.ftruncate(fd, 0)
            self._resize(path, 0)
        return fd

    def release(self, path: str, fh: int) -> int:
        os.close(fh)
        return 0

    def unlink(self, path: str) -> int:
        os.unlink(self._real(path))
        self.pending.pop(path, None)
        return 0

    def rename(self, old: str, new: str) -> int:
        if old in self.pending and os.path.exists(self._real(new)):
            self._commit(old)  # ext4's auto_da_alloc
        os.rename(self._real(old), self._real(new))
        self.pending.pop(new, None)
        prefix = old.rstrip("/") + "/"
        for key in [k for k in self.pending if k == old or k.startswith(prefix)]:
            self.pending[new + key[len(old) :]] = self.pending.pop(key)
        return 0

    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._real(path), mode)
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._real(path))
        return 0

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._real(path))]

    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._real(path), mode)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        os.chown(self._real(path), uid, gid)
        return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        if times is None:
            os.utime(self._real(path))
        else:
            os.utime(self._real(path), ns=times)
        return 0

    def access(self, path: str, amode: int) -> int:
        if not os.access(self._real(path), amode):
            raise mfusepy.FuseOSError(errno.EACCES)
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self._real(path))
        return {
            key: getattr(st, key)
            for key in (
                "f_bsize",
                "f_frsize",
                "f_blocks",
                "f_bfree",
                "f_bavail",
                "f_files",
                "f_ffree",
                "f_favail",
                "f_flag",
                "f_namemax",
            )
        }

    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m chaos.powerloss_fs BACKING MOUNTPOINT", file=sys.stderr)
        return 2
    backing, mountpoint = argv
    if not os.path.isdir(backing) or not os.path.isdir(mountpoint):
        print(f"error: {backing} and {mountpoint} must both be directories", file=sys.stderr)
        return 2
    mfusepy.FUSE(PowerLossFs(backing), mountpoint, foreground=True, nothreads=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
