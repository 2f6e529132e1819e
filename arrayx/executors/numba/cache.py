"""Numba's on-disk cache for arrayx's kernels, kept in a verified private folder and self-repairing.

Numba's index files (``.nbi``) and data files (``.nbc``) are pickles: loading one from a folder
another user can write runs their code.  So arrayx decides where its kernels' compiled code
lives (next to their sources, never ``NUMBA_CACHE_DIR`` or a shared temporary path) and loads
from a folder only after ``open_private`` accepted it: the path as given and the path it resolves
to, each folder on the way owned by this user or root and writable by no one else unless sticky
(and a sticky folder's entries then owned by this user or root; a symbolic link likewise).  The
folder is then opened once, and every file of the cache is read, written, listed and removed
relative to that held handle (``dir_fd``, never following a symbolic link): swapping a folder or
link on the path after the check changes nothing for the running process.

Every file arrayx writes for Numba carries a checksum (``MAGIC`` + BLAKE2b of the rest): a file
whose checksum does not match (a flipped bit, a truncated write, a file from before this format)
never reaches the unpickler or Numba's loader; it is discarded and the kernel compiled again (and
saved, where the folder is writable).  A read-only folder with valid kernels is loaded from, and
new kernels are simply not saved.

This module imports Numba; only ``numba.kernels`` imports it, when a kernel is first built.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import pickle
import stat
import time
import uuid
import warnings

import numba
from numba.core.caching import (
    CompileResultCacheImpl, FunctionCache, IndexDataCacheFile, _CacheLocator, _SourceFileBackedLocatorMixin,
)

__all__ = ["attach", "verify_private", "open_private", "MAGIC", "seal", "unseal"]

_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
_TRUSTED_OWNERS = (0,)  # root, besides this user: it can change anything anyway

#: the first bytes of every cache file arrayx writes (then a 32-byte BLAKE2b digest of the rest)
MAGIC = b"AXNBC01\n"
_DIGEST = 32


class DamagedFile(Exception):
    """A cache file whose checksum does not match its content."""


def seal(payload: bytes) -> bytes:
    """``payload`` as stored: MAGIC, its checksum, itself."""
    return MAGIC + hashlib.blake2b(payload, digest_size=_DIGEST).digest() + payload


def unseal(data: bytes, name: str) -> bytes:
    """The payload of a stored file, or DamagedFile."""
    head = len(MAGIC) + _DIGEST
    if len(data) < head or not data.startswith(MAGIC):
        raise DamagedFile(f"{name}: not an arrayx cache file (no checksum)")
    payload = data[head:]
    if hashlib.blake2b(payload, digest_size=_DIGEST).digest() != data[len(MAGIC):head]:
        raise DamagedFile(f"{name}: checksum mismatch")
    return payload


def _folder_problem(path: str, st, last: bool) -> str | None:
    """Why the folder (or link) ``path`` with lstat/stat ``st`` lets someone else change what is below it."""
    uid = os.getuid()
    owner_ok = st.st_uid == uid or st.st_uid in _TRUSTED_OWNERS
    if last:
        if stat.S_ISLNK(st.st_mode):
            return None if owner_ok else f"{path} is a symbolic link owned by uid {st.st_uid}"
        if st.st_uid != uid:
            return f"{path} is owned by uid {st.st_uid}, not by this user (uid {uid})"
        if st.st_mode & _OTHERS_WRITE:
            return f"{path} is writable by other users (mode {stat.S_IMODE(st.st_mode):04o})"
        return None
    if not owner_ok:
        return f"{path}, above the cache, is owned by uid {st.st_uid} (neither this user nor root)"
    if stat.S_ISDIR(st.st_mode) and st.st_mode & _OTHERS_WRITE and not st.st_mode & stat.S_ISVTX:
        return f"{path}, above the cache, is writable by other users (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _walk(path: str) -> str | None:
    """Check each step of the absolute ``path`` as written (symbolic links not followed): every
    folder above an entry, and every link on the way, must be unchangeable by other users."""
    parts = [p for p in path.split(os.sep) if p]
    current = os.sep
    try:
        problem = _folder_problem(current, os.lstat(current), False)
        if problem:
            return problem
        for i, part in enumerate(parts):
            current = os.path.join(current, part)
            st = os.lstat(current)
            last = i == len(parts) - 1
            if stat.S_ISLNK(st.st_mode):  # a link's target is checked as the resolved path
                problem = _folder_problem(current, st, True)
            else:
                problem = _folder_problem(current, st, last)
            if problem:
                return problem
    except OSError as e:
        return f"{current} cannot be read ({e.strerror})"
    return None


def verify_private(path: str) -> str | None:
    """Why ``path`` (an existing folder) must not be trusted, or None when it may be.

    Trusted: the folder it resolves to is owned by this user and writable by no one else, and, on
    the path as given and on the resolved one, every folder above it is owned by this user or root
    and writable by no one else unless sticky (like /tmp), and every symbolic link is owned by this
    user or root: no one else can put files in it or swap it, or a folder or link above it.
    """
    path = os.path.abspath(path)
    real = os.path.realpath(path)
    try:
        if not stat.S_ISDIR(os.stat(real).st_mode):
            return f"{path} is not a folder"
    except OSError as e:
        return f"{path} cannot be read ({e.strerror})"
    for p in dict.fromkeys((path, real)):
        problem = _walk(p)
        if problem is not None:
            return problem
    return None


def open_private(path: str) -> tuple[str, int] | str:
    """(the resolved path, a handle on the folder) once ``verify_private`` accepts ``path``, or why not.

    The handle is opened on the resolved path without following a link and checked to be the
    folder verified (same device and inode, still owned by this user, still private)."""
    problem = verify_private(path)
    if problem is not None:
        return problem
    real = os.path.realpath(os.path.abspath(path))
    try:
        fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        return f"{real} cannot be opened ({e.strerror})"
    st, verified = os.fstat(fd), os.stat(real, follow_symlinks=False)
    if (st.st_dev, st.st_ino) != (verified.st_dev, verified.st_ino) or _folder_problem(real, st, True):
        os.close(fd)
        return f"{real} changed while it was being checked"
    return real, fd


# -- files relative to the held folder --------------------------------------------------------------

_READ = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def read_file(dir_fd: int, name: str) -> bytes:
    """The bytes of the regular file ``name`` in the held folder (a link or anything else: OSError)."""
    fd = os.open(name, _READ, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{name} is not a regular file")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def write_file(dir_fd: int, name: str, data: bytes) -> None:
    """Write ``name`` in the held folder atomically (a new private file, then renamed over it)."""
    tmp = f".{name}.{uuid.uuid4().hex[:16]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600,
                 dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


class _CheckedCacheFile(IndexDataCacheFile):
    """Numba's index and data files, read and written relative to the held folder, with checksums."""

    def __init__(self, dir_fd: int, cache_path, filename_base, source_stamp):
        super().__init__(cache_path, filename_base, source_stamp)
        self._fd = dir_fd

    def _load_index(self):
        try:
            data = read_file(self._fd, self._index_name)
        except FileNotFoundError:
            return {}
        data = unseal(data, self._index_name)
        version, stamp_overloads = pickle.loads(data)
        if version != self._version:
            return {}
        stamp, overloads = stamp_overloads
        return overloads if stamp == self._source_stamp else {}

    def _save_index(self, overloads):
        write_file(self._fd, self._index_name, seal(pickle.dumps((self._version, (self._source_stamp, overloads)),
                                                                 protocol=-1)))

    def _load_data(self, name):
        return pickle.loads(unseal(read_file(self._fd, name), name))

    def _save_data(self, name, data):
        write_file(self._fd, name, seal(self._dump(data)))


class _VerifiedFolderLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """Compiled code sits next to the kernel's source, in the folder cache_dir() verified."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.dirname(py_file)

    def get_cache_path(self):
        return self._cache_path

    def ensure_cache_path(self):  # before saving: the folder must be writable (it exists)
        if not os.access(self._cache_path, os.W_OK):
            raise OSError(f"{self._cache_path} is read-only")

    def get_source_stamp(self):  # the source's digest, read through the held folder
        fd = _folder_fd(self._cache_path)
        if fd is None or os.path.dirname(self._py_file) != self._cache_path:  # (arrayx's own modules)
            return super().get_source_stamp()
        return hashlib.sha256(read_file(fd, os.path.basename(self._py_file))).hexdigest()

    @classmethod
    def from_function(cls, py_func, py_file):
        return cls(py_func, py_file)  # a read-only folder is still loaded from


class _KernelCacheImpl(CompileResultCacheImpl):
    _locator_classes = [_VerifiedFolderLocator]


class KernelCache(FunctionCache):
    """Numba's per-function cache, in the kernel's folder, discarding files it cannot load."""

    _impl_class = _KernelCacheImpl

    def __init__(self, py_func):
        super().__init__(py_func)
        fd = _folder_fd(self._cache_path)
        if fd is None:  # only folders cache_dir() verified and holds are used
            raise OSError(f"{self._cache_path} is not the verified kernel cache folder")
        files = self._cache_file
        self._fd = fd
        self._cache_file = _CheckedCacheFile(fd, self._cache_path, files._index_name[:-len(".nbi")],
                                             files._source_stamp)

    def load_overload(self, sig, target_context):
        try:
            return super().load_overload(sig, target_context)
        except Exception as e:  # UnpicklingError, EOFError, bad data ...: compile again
            self._discard(e)
            return None

    def save_overload(self, sig, data):
        try:
            super().save_overload(sig, data)
        except OSError:  # a read-only folder: what it holds is used, new kernels are not kept
            pass

    def _discard(self, error: Exception) -> None:
        base = self._cache_file._index_name[:-len(".nbi")]
        removed = True
        try:
            names = [n for n in os.listdir(self._fd)
                     if n == base + ".nbi" or (n.startswith(base + ".") and n.endswith(".nbc"))]
        except OSError:
            names, removed = [], False
        for name in names:
            try:
                os.unlink(name, dir_fd=self._fd)
            except OSError:
                removed = False
        warnings.warn(
            f"arrayx: a cached Numba kernel in {self._cache_path} could not be loaded "
            f"({type(error).__name__}: {error}); compiling it again"
            + ("" if removed else " (the folder is read-only: the damaged file stays)"),
            RuntimeWarning, stacklevel=2,
        )


def _cache_in(folder: str) -> type:
    """KernelCache keeping its files in ``folder`` instead of next to the function's source."""
    class Locator(_VerifiedFolderLocator):
        @classmethod
        def from_function(cls, py_func, py_file):
            locator = cls(py_func, py_file)
            locator._cache_path = folder
            return locator

    impl = type("FolderCacheImpl", (_KernelCacheImpl,), {"_locator_classes": [Locator]})
    return type("FolderKernelCache", (KernelCache,), {"_impl_class": impl})


def _folder_fd(path: str) -> int | None:
    """The handle ``numba.kernels`` holds on the verified cache folder, where ``path`` is that folder."""
    from arrayx.executors.numba import kernels as K

    folder = K.cache_dir()
    return K.cache_fd() if folder is not None and os.path.normpath(path) == str(folder) else None


def attach(dispatcher, folder=None) -> None:
    """Give a Numba dispatcher (made with cache=False) the on-disk cache in its source's folder,
    or in ``folder`` (a verified cache folder: for functions of arrayx's own modules)."""
    cache = KernelCache if folder is None else _cache_in(str(folder))
    dispatcher._cache = cache(dispatcher.py_func)


# -- pruning: only the folders arrayx made (moved from kernels.py) ------------------------------------

#: the file in each kernel folder arrayx made, and its text: a folder without it is never removed
MARKER = "ARRAYX_KERNEL_CACHE"
MARKER_TEXT = b"arrayx Numba kernel cache: made by arrayx, which removes it when unused for 30 days\n"
STALE_AFTER_DAYS = 30


def mark(fd: int) -> None:
    """Put the marker in the kernel folder held by ``fd`` (arrayx just made it)."""
    try:
        write_file(fd, MARKER, MARKER_TEXT)
    except OSError:  # unmarked: kept for good, never removed
        pass


def marked(folder: pathlib.Path) -> bool:
    """``folder`` is a real folder (not a link) holding arrayx's marker file (a regular file)."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return False
        marker = folder / MARKER
        return stat.S_ISREG(os.lstat(marker).st_mode) and marker.read_bytes() == MARKER_TEXT
    except OSError:
        return False


def prune_stale(current: pathlib.Path) -> None:
    """Remove the kernel folders of other arrayx versions not used for STALE_AFTER_DAYS: only
    ``kernels-*`` folders in arrayx's own subfolder that carry its marker (``MARKER``); anything
    else there, and everything outside it, is never touched.

    A process marks its own folder as used (its mtime) when it starts, so a folder in use by
    another installation is never older than that.
    """
    try:
        os.utime(current)
    except OSError:  # a read-only cache: nothing to prune either
        return
    from arrayx.executors.numba.kernels import CACHE_SUBFOLDER

    if current.parent.name != CACHE_SUBFOLDER:  # (never: cache_dir makes it so)
        return
    cutoff = time.time() - STALE_AFTER_DAYS * 86400
    for other in current.parent.glob("kernels-*"):
        try:
            if other != current and marked(other) and os.lstat(other).st_mtime < cutoff:
                shutil.rmtree(other, ignore_errors=True)
        except OSError:
            continue
