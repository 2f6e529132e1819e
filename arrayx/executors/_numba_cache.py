"""Numba's on-disk cache for arrayx's kernels, kept in a verified private folder and self-repairing.

Numba's index files (``.nbi``) and data files (``.nbc``) are pickles: loading one from a folder
another user can write runs their code.  So arrayx decides where its kernels' compiled code
lives (next to their sources, never ``NUMBA_CACHE_DIR`` or a shared temporary path) and loads
from a folder only after ``verify_private`` accepted it.  A truncated, empty or garbage file
is discarded and the kernel compiled again (and saved, where the folder is writable); a
read-only folder with valid kernels is loaded from, and new kernels are simply not saved.

This module imports Numba; only ``_numba_kernels`` imports it, when a kernel is first built.
"""
from __future__ import annotations

import glob
import os
import stat
import tempfile
import warnings

from numba.core.caching import (
    CompileResultCacheImpl, FunctionCache, _CacheLocator, _SourceFileBackedLocatorMixin,
)

__all__ = ["attach", "verify_private"]

_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def verify_private(path: str) -> str | None:
    """Why ``path`` (an existing folder) must not be trusted, or None when it may be.

    Trusted: owned by this user, writable by no one else, and every folder above it either
    writable by no one else or sticky (like /tmp), so no one else can put files in it or
    swap it for another folder.
    """
    uid = os.getuid()
    try:
        if os.path.islink(path) and os.lstat(path).st_uid not in (uid, 0):
            return f"{path} is a symbolic link owned by uid {os.lstat(path).st_uid}"
        st = os.stat(path)
    except OSError as e:
        return f"{path} cannot be read ({e.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a folder"
    if st.st_uid != uid:
        return f"{path} is owned by uid {st.st_uid}, not by this user (uid {uid})"
    if st.st_mode & _OTHERS_WRITE:
        return f"{path} is writable by other users (mode {stat.S_IMODE(st.st_mode):04o})"
    parent = os.path.dirname(os.path.realpath(path))
    while True:
        try:
            pst = os.stat(parent)
        except OSError as e:
            return f"{parent} cannot be read ({e.strerror})"
        if pst.st_mode & _OTHERS_WRITE and not pst.st_mode & stat.S_ISVTX:
            return f"{parent}, above the cache, is writable by other users (mode {stat.S_IMODE(pst.st_mode):04o})"
        up = os.path.dirname(parent)
        if up == parent:
            return None
        parent = up


class _VerifiedFolderLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """Compiled code sits next to the kernel's source, in the folder cache_dir() verified."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.dirname(py_file)

    def get_cache_path(self):
        return self._cache_path

    def ensure_cache_path(self):  # before saving: the folder must be writable (it exists)
        tempfile.TemporaryFile(dir=self._cache_path).close()

    @classmethod
    def from_function(cls, py_func, py_file):
        return cls(py_func, py_file)  # a read-only folder is still loaded from


class _KernelCacheImpl(CompileResultCacheImpl):
    _locator_classes = [_VerifiedFolderLocator]


class KernelCache(FunctionCache):
    """Numba's per-function cache, in the kernel's folder, discarding files it cannot load."""

    _impl_class = _KernelCacheImpl

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
        files = self._cache_file
        pattern = os.path.join(glob.escape(self._cache_path), glob.escape(files._index_name[:-len(".nbi")]))
        removed = True
        for path in glob.glob(pattern + ".nbi") + glob.glob(pattern + ".*.nbc"):
            try:
                os.unlink(path)
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


def attach(dispatcher, folder=None) -> None:
    """Give a Numba dispatcher (made with cache=False) the on-disk cache in its source's folder,
    or in ``folder`` (a verified cache folder: for functions of arrayx's own modules)."""
    cache = KernelCache if folder is None else _cache_in(str(folder))
    dispatcher._cache = cache(dispatcher.py_func)
