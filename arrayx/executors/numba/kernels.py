"""The Numba executor's kernels: scalar expressions as data, loops as source templates.

Every kernel is generated from a template into a real ``.py`` file under the kernel cache
directory (a private folder, verified before use: see ``cache_dir``), compiled under that
file's name, and given a Numba disk cache in the same folder (``numba.cache``), so a later
process loads the compiled machine code instead of compiling again; damaged cache files are
discarded and compiled again.  Each file holds one kernel for one operation and one dtype, is
written once (an unchanged file keeps Numba's cache valid), and is only generated and compiled
when an array of that dtype first reaches the operation.  Without a safe folder, kernels are
compiled in memory.

Literals in the expressions are written ``T(...)`` (the operand dtype) or ``A(...)`` (the
accumulator dtype): Numba would otherwise compute ``float32 + 1.5`` in float64 and
``int8 + 1`` in int64.  The kernels take flattened, C-contiguous arrays; the executor
reshapes and falls back to NumPy for anything else.

This module does not import Numba; the generated files do.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import sys
import threading
import types

import numpy as np

from arrayx.core import config as _config

__all__ = [
    "UNARY", "BINARY", "FIXUPS", "REDUCTIONS", "WHERE_KINDS", "CLIP_KINDS", "cache_dir",
    "elementwise_kernel", "vector_kernel", "vector_step", "where_kernel", "clip_kernel", "reduction_kernel", "sqdev_kernel",
]

# dtype groups, by NumPy kind letter
_FLOAT = "f"
_REAL = "iuf"
_INT_BOOL = "biu"
_BOOL = "b"
_ALL_REAL = "biuf"

#: unary operation -> (dtype kinds run natively, result "same" or "bool", expression of ``a``);
#: ``{bits}`` in an expression is the float width (``nm.exp{bits}`` is ``exp32`` or ``exp64``)
UNARY: dict[str, tuple[str, str, str]] = {
    "abs": (_REAL, "same", "abs(a)"),
    "bitwise_invert": ("iu", "same", "~a"),
    "ceil": (_FLOAT, "same", "np.ceil(a)"),
    "cos": (_FLOAT, "same", "nm.cos{bits}(a)"),
    "exp": (_FLOAT, "same", "nm.exp{bits}(a)"),
    "expm1": (_FLOAT, "same", "nm.expm1_{bits}(a)"),
    "floor": (_FLOAT, "same", "np.floor(a)"),
    "isfinite": (_FLOAT, "bool", "abs(a) < T(np.inf)"),
    "isinf": (_FLOAT, "bool", "abs(a) == T(np.inf)"),
    "isnan": (_FLOAT, "bool", "a != a"),
    "logical_not": (_BOOL, "bool", "not a"),
    "negative": (_REAL, "same", "-a"),
    "positive": (_REAL, "same", "a"),
    "reciprocal": (_FLOAT, "same", "T(1) / a"),
    "round": (_FLOAT, "same", "nm.round_half_even{bits}(a)"),
    "sign": (_FLOAT, "same", "nm.sign_float(a, T(1), T(0))"),
    "signbit": (_FLOAT, "bool", "math.copysign(T(1), a) < T(0)"),
    "sin": (_FLOAT, "same", "nm.sin{bits}(a)"),
    "sqrt": (_FLOAT, "same", "np.sqrt(a)"),
    "square": (_REAL, "same", "a * a"),
    "tanh": (_FLOAT, "same", "nm.tanh{bits}(a)"),
    "trunc": (_FLOAT, "same", "np.trunc(a)"),
}

#: binary operation -> (dtype kinds run natively, result "same" or "bool", expression of ``a``, ``b``)
BINARY: dict[str, tuple[str, str, str]] = {
    "add": (_REAL, "same", "a + b"),
    "bitwise_and": (_INT_BOOL, "same", "a & b"),
    "bitwise_or": (_INT_BOOL, "same", "a | b"),
    "bitwise_xor": (_INT_BOOL, "same", "a ^ b"),
    "copysign": (_FLOAT, "same", "math.copysign(a, b)"),
    "divide": (_FLOAT, "same", "a / b"),
    "equal": (_ALL_REAL, "bool", "a == b"),
    "greater": (_ALL_REAL, "bool", "a > b"),
    "greater_equal": (_ALL_REAL, "bool", "a >= b"),
    "less": (_ALL_REAL, "bool", "a < b"),
    "less_equal": (_ALL_REAL, "bool", "a <= b"),
    "logical_and": (_BOOL, "bool", "a & b"),
    "logical_or": (_BOOL, "bool", "a | b"),
    "logical_xor": (_BOOL, "bool", "a ^ b"),
    # NumPy's maximum/minimum: NaN from either side wins, on ties the second operand
    "maximum": (_REAL, "same", "a if (a > b) | (a != a) else b"),
    "minimum": (_REAL, "same", "a if (a < b) | (a != a) else b"),
    "multiply": (_REAL, "same", "a * b"),
    "not_equal": (_ALL_REAL, "bool", "a != b"),
    "subtract": (_REAL, "same", "a - b"),
}

#: operations whose fast expression is inaccurate for some inputs: (condition, exact expression)
FIXUPS: dict[str, tuple[str, str]] = {
    "sin": ("nm.trig_needs_libm{bits}(a)", "T(math.sin(np.float64(a)))"),
    "cos": ("nm.trig_needs_libm{bits}(a)", "T(math.cos(np.float64(a)))"),
}

#: reduction primitive -> dtype kinds run natively (mean/var/std use the sum and sqdev kernels)
REDUCTIONS: dict[str, str] = {
    "sum": _ALL_REAL, "prod": _ALL_REAL, "max": _REAL, "min": _REAL,
    "mean": _FLOAT, "var": _FLOAT, "std": _FLOAT,
}

#: dtype kinds of ``where`` (x1/x2) and ``clip`` run natively
WHERE_KINDS = _ALL_REAL
CLIP_KINDS = _REAL

_CHUNK = 4096  # elements per parallel work item of an elementwise kernel
_BLOCK = 1024  # elements summed per block before joining the running sum (accuracy)


def chunks(size: int) -> int:
    """How many chunks an elementwise kernel of ``size`` elements claims (see _TEAM_KERNEL)."""
    return max(1, -(-size // _CHUNK))


_HEADER = '''\
# Generated by arrayx.executors.numba.kernels ({what}); do not edit.
# The file is stable so that Numba's on-disk cache of the compiled kernel stays valid.
import math

import numpy as np
from numba import njit

from arrayx.executors.numba import math as nm

T = np.{dtype}
A = np.{acc}
'''

# cache=False: arrayx attaches its own disk cache (numba.cache), in the verified kernel folder
_JIT = 'njit(parallel={parallel}, cache=False, nogil=True, error_model="numpy", fastmath={fastmath})'

# Elementwise kernels (and where, clip) cut the flat arrays into chunks of _CHUNK elements, which
# the threads entering the kernel claim in turn (``numba.team``: the caller alone, or with the
# team's workers, each entering once per call), and index each chunk from 0: LLVM then knows the
# indices are not negative, drops Numba's wrap-around check and vectorises the loop.
_TEAM_KERNEL = '''
from arrayx.executors.numba import team as team
from arrayx.executors.numba import vectors as vec


@{jit}
def kernel(claims, {args}out):
{width}    n = out.size
    chunks = (n + {chunk} - 1) // {chunk}
    c = team.claim(claims)
    mine = 0
    while c < chunks:
        c0 = c * {chunk}
        c1 = min(c0 + {chunk}, n)
{body}
        team.finish(claims)
        mine += 1
        c = team.claim(claims)
    return mine
'''

# A matrix (rows, inner), C-contiguous, and a vector along its rows ("r": one value per column, x - mean
# of StandardScaler) or along its columns ("c": one value per row); the executor views an F-ordered
# operand (``X.T``) as its C-ordered transpose.  Chunks are ``step`` rows; returns the chunks run
# by this thread (the executor's ``team_pays``).
_VECTOR_KERNEL = '''
from arrayx.executors.numba import team as team
from arrayx.executors.numba import vectors as vec


@{jit}
def kernel(claims, x, y, step, out):
{width}    rows, inner = out.shape
    chunks = (rows + step - 1) // step
    c = team.claim(claims)
    mine = 0
    while c < chunks:
        r0 = c * step
        r1 = min(r0 + step, rows)
        for r in range(r0, r1):
            orow = out[r]
{row_setup}
            for i in range(inner):
{loads}
                orow[i] = {expr}
        team.finish(claims)
        mine += 1
        c = team.claim(claims)
    return mine
'''

_ELEMENTWISE = '''\
{slices}
        oc = out[c0:c1]
        for i in range(c1 - c0):
{loads}
            oc[i] = {expr}'''

# The same, followed by a second pass over a chunk where the fast expression is not accurate
# (flagged with a boolean OR, which vectorises; an integer count made sin 2x slower).
_ELEMENTWISE_FIXUP = '''\
{slices}
        oc = out[c0:c1]
        bad = False
        for i in range(c1 - c0):
{loads}
            oc[i] = {expr}
            bad |= {fix_cond}
        if bad:
            for i in range(c1 - c0):
{loads_fix}
                if {fix_cond}:
                    oc[i] = {fix_expr}'''

# Reductions take x as (outer, red, inner), C-contiguous, and write one partial result per
# (outer row, split of the reduced axis, inner column) to part[outer, nsplit, inner]: the
# work items are (row, split) pairs, so one long row and many short rows both run in parallel.
# Like the elementwise kernels they run on ``numba.team``: chunks of ``group`` work items, claimed
# by the threads entering the kernel, compiled for one thread (no parfors: a third of the compile
# time, and the serial and parallel executor share the kernel); returns the chunks this thread ran.
# Each work item's result does not depend on the thread that computes it.
_REDUCTION = '''
from arrayx.executors.numba import team as team


@{jit}
def kernel(claims, x, {extra}step, group, part{extra_out}):
    outer, red, inner = x.shape
    nsplit = part.shape[1]
    items = outer * nsplit
    chunks = (items + group - 1) // group
    flat = x.reshape(x.size)
    c = team.claim(claims)
    mine = 0
    while c < chunks:
        for w in range(c * group, min(c * group + group, items)):
            o = w // nsplit
            s = w - o * nsplit
            lo = s * step
            hi = min(lo + step, red)
            if inner == 1:
                row = flat[o * red + lo:o * red + hi]
{row}
            else:
                p = part[o, s]
{columns}
        team.finish(claims)
        mine += 1
        c = team.claim(claims)
    return mine
'''

# Sums (and products) of one row: blocks of _BLOCK (vectorised, fastmath reassociation allowed),
# joined into a running total, so rounding error grows with n / _BLOCK, not n.  Lines marked
# "#abs" also sum |v| into ``pabs`` (float sums: the executor checks it against overflow).
_ROW_FOLD = '''\
            acc = A({init})
            acc_abs = A(0)  #abs
            for r in range(0, row.size, {block}):
                blk = row[r:r + {block}]
                b = A({init})
                b_abs = A(0)  #abs
                for k in range(blk.size):
                    {load}
                    b {op}= v
                    b_abs += abs(v)  #abs
                acc {op}= b
                acc_abs += b_abs  #abs
            part[o, s, 0] = acc
            pabs[o, s, 0] = acc_abs  #abs'''

_COLUMNS_FOLD = '''\
            pa = pabs[o, s]  #abs
            for j in range(inner):
                p[j] = A({init})
                pa[j] = A(0)  #abs
            for k in range(lo, hi):
                xr = x[o, k]
{col_setup}
                for j in range(inner):
                    {load}
                    p[j] {op}= v
                    pa[j] += abs(v)  #abs'''


def _with_abs(template: str, keep: bool) -> str:
    """The template with its "#abs" lines kept (marker removed) or dropped."""
    lines = template.split("\n")
    if keep:
        return "\n".join(line.replace("  #abs", "") for line in lines)
    return "\n".join(line for line in lines if not line.endswith("#abs"))

# max/min of one row: 8 independent lanes that skip NaN (a plain compare-and-select), a flag for
# NaNs beside them, then the lanes in order; when there is a NaN, the first one is returned.
_ROW_SELECT = '''\
            a0 = row[0]
            a1 = a0
            a2 = a0
            a3 = a0
            a4 = a0
            a5 = a0
            a6 = a0
            a7 = a0
            nans = False
            n8 = (row.size // 8) * 8
            for k in range(0, n8, 8):
{lanes}
            for k in range(n8, row.size):
                v = row[k]
                a0 = {pick0}
{count}
{join}
{nan_scan}
            part[o, s, 0] = a0'''

_NAN_SCAN = '''\
            if nans:
                for k in range(row.size):
                    if row[k] != row[k]:
                        a0 = row[k]
                        break'''

_COLUMNS_SELECT = '''\
            first = x[o, lo]
            for j in range(inner):
                p[j] = first[j]
            for k in range(lo + 1, hi):
                xr = x[o, k]
                for j in range(inner):
                    v = xr[j]
                    a = p[j]
                    p[j] = {pick}'''

#: (a, v) -> the kept value; NaN wins; on ties the later element (NumPy's maximum/minimum)
_PICK = {"max": "{a} if ({a} > v) | ({a} != {a}) else v", "min": "{a} if ({a} < v) | ({a} != {a}) else v"}
#: the same for the lanes, where NaNs are counted apart: a NaN ``v`` is never picked
_PICK_LANE = {"max": "v if v >= {a} else {a}", "min": "v if v <= {a} else {a}"}

# array-api-compat's clip (the NumPy executor's): with both bounds x is kept on ties and a NaN
# bound gives NaN; with one bound it is NumPy's maximum/minimum (the bound is kept on ties).
_CLIP = {
    "both": ("lo != lo", "lo", "hi != hi", "hi", "lo if a < lo else a", "hi if v > hi else v"),
    "lo": ("lo != lo", "lo", "False", "hi", "a if (a > lo) | (a != a) else lo", "v"),
    "hi": ("False", "lo", "hi != hi", "hi", "a", "v if (v < hi) | (v != v) else hi"),
}

_CLIP_TEMPLATE = '''\
        xc = x[c0:c1]
        oc = out[c0:c1]
        if {lo_nan}:
            oc[:] = {lo_name}
        elif {hi_nan}:
            oc[:] = {hi_name}
        else:
            for i in range(c1 - c0):
                a = xc[i]
                v = {first}
                oc[i] = {second}'''


#: arrayx's own folder inside the cache folder: only its ``kernels-*`` folders are ever pruned
#: (cache.prune_stale, which also owns the marker file)
CACHE_SUBFOLDER = "arrayx-numba-kernels"

# -- where the files go ---------------------------------------------------------------------------

def _sources_digest() -> str:
    """Digest of everything a generated kernel depends on (a change makes a fresh directory)."""
    import numba

    h = hashlib.sha256()
    here = pathlib.Path(__file__).parent
    for name in ("kernels.py", "math.py", "math_defs.py", "../libm.py", "cache.py", "fusion/fold.py",
                 "fusion/pointers.py", "team.py",
                 "vectors.py"):
        h.update((here / name).read_bytes())
    h.update(f"{numba.__version__} {np.__version__} {sys.version_info[:2]}".encode())
    return h.hexdigest()[:16]


def _default_root() -> pathlib.Path:
    """The folder the kernel cache is kept in (in its own subfolder ``CACHE_SUBFOLDER``)."""
    if _config.is_set("ARRAYX_NUMBA_CACHE_DIR"):
        return _config.get("ARRAYX_NUMBA_CACHE_DIR")
    if _config.is_set("ARRAYX_CACHE_DIR"):
        return _config.get("ARRAYX_CACHE_DIR") / "numba"
    return _user_cache() / "arrayx" / "numba"


def _user_cache() -> pathlib.Path:
    """``$XDG_CACHE_HOME`` (when absolute), else ``~/.cache``, else, with no home folder known (HOME
    unset or relative and no password entry: ``~`` would name a folder ``~`` in the working
    directory), a folder of this user in the temporary area (``tempfile.gettempdir()``)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):  # the XDG spec: a relative value is ignored
        return pathlib.Path(xdg)
    home = os.path.expanduser("~")
    if os.path.isabs(home) and os.path.realpath(home) != os.path.realpath(os.sep):
        return pathlib.Path(home) / ".cache"
    import tempfile

    user = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    # (a folder of that name someone else made first is refused by the checks in cache_dir)
    return pathlib.Path(tempfile.gettempdir()) / f"arrayx-cache-{user}"


_dir: pathlib.Path | None = None
_dir_fd: int | None = None  # a handle on _dir, held for the process: every cache file is opened relative to it
_dir_problem: str | None = None  # why kernels are compiled without a disk cache in this process
_dir_lock = threading.Lock()
_lock = threading.Lock()
_kernels: dict[tuple, object] = {}


# -- fork: never a lock held by a thread the child does not have ------------------------------------

#: seconds a fork waits for a compile in another thread to finish (then the child gets new locks;
#: Numba's state may then be half-made there, but no lock in it is waited on for good)
FORK_WAIT_S = 60.0
_held_for_fork: list = []


def _compiler_lock():
    """Numba's global compiler lock, where Numba is imported (None otherwise)."""
    mod = sys.modules.get("numba.core.compiler_lock")
    return None if mod is None else mod.global_compiler_lock._lock


def _before_fork() -> None:
    """Wait (bounded) for a compile in another thread: the child then starts with no compile half done."""
    for lock in (_lock, _compiler_lock()):  # the order compiles take them in
        if lock is not None and lock.acquire(timeout=FORK_WAIT_S):
            _held_for_fork.append(lock)


def _after_fork_in_parent() -> None:
    while _held_for_fork:
        _held_for_fork.pop().release()


def _after_fork_in_child() -> None:
    global _lock, _dir_lock
    held = list(_held_for_fork)
    _held_for_fork.clear()
    _lock, _dir_lock = threading.Lock(), threading.Lock()  # whoever held them is not here
    numba_lock = _compiler_lock()
    if numba_lock is not None:
        if any(lock is numba_lock for lock in held):
            numba_lock.release()  # held by this thread since _before_fork
        else:  # a compile that did not finish in time: its thread is not here
            sys.modules["numba.core.compiler_lock"].global_compiler_lock._lock = threading.RLock()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                    after_in_child=_after_fork_in_child)


def _make_private(path: pathlib.Path) -> bool:
    """Create the missing folders of ``path`` with mode 0700 (existing ones are left as they are);
    whether this call created ``path`` itself."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    made = False
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
            made = True
        except FileExistsError:
            made = False
    return made


def cache_dir() -> pathlib.Path | None:
    """Folder of the generated kernel sources and of Numba's compiled code for them, or None when
    no safe folder exists here (kernels are then compiled in memory; ``cache_problem()`` says why).

    The folder ``kernels-<digest of the kernel sources>`` in the subfolder ``CACHE_SUBFOLDER`` of
    ``ARRAYX_NUMBA_CACHE_DIR``, else of ``$ARRAYX_CACHE_DIR/numba``, else of ``~/.cache/arrayx/numba``
    (``$XDG_CACHE_HOME`` respected; with no home folder, ``<tempfile.gettempdir()>/arrayx-cache-<uid>``
    instead of ``~/.cache``).  Folders arrayx creates are private (0700); before anything is loaded
    the folder must be owned by this user and writable by no one else (see
    ``numba.cache.verify_private``), else it is not used.  A read-only folder is used as it is.
    """
    global _dir, _dir_fd, _dir_problem
    if _dir is None and _dir_problem is None:
        with _dir_lock:
            if _dir is None and _dir_problem is None:
                chosen, _dir_problem = _choose_dir()
                if chosen is not None:
                    _dir_fd = chosen[1]
                    _dir = pathlib.Path(chosen[0])
                if _dir_problem is not None:
                    import warnings

                    warnings.warn(f"arrayx numba executor: kernels are compiled without a disk cache in this "
                                  f"process: {_dir_problem}", RuntimeWarning, stacklevel=3)
    return _dir


def cache_fd() -> int | None:
    """The handle held on ``cache_dir()`` (files of the cache are opened relative to it), or None."""
    cache_dir()
    return _dir_fd


def cache_problem() -> str | None:
    """Why this process has no kernel disk cache (None when it has one)."""
    cache_dir()
    return _dir_problem


def _choose_dir() -> tuple[tuple[str, int] | None, str | None]:
    """((resolved folder, held handle on it), None), or (None, why no folder is used)."""
    from arrayx.executors.numba.cache import mark, open_private, prune_stale, verify_private

    d = _default_root() / CACHE_SUBFOLDER / f"kernels-{_sources_digest()}"
    try:
        made = _make_private(d)
    except OSError as e:
        if not d.is_dir():
            return None, f"cannot create {d} ({e.strerror})"
        made = False
    problem = verify_private(str(d.parent))
    opened = open_private(str(d)) if problem is None else problem
    if isinstance(opened, str):
        return None, f"{opened}; use a private folder (ARRAYX_NUMBA_CACHE_DIR)"
    if made:
        mark(opened[1])
    prune_stale(pathlib.Path(opened[0]))
    return opened, None


def _source_file(stem: str, source: str) -> pathlib.Path | None:
    """The kernel's source file in the cache folder (written once), or None: no usable file."""
    from arrayx.executors.numba.cache import read_file, write_file

    folder = cache_dir()
    if folder is None:
        return None
    name = f"{stem}.py"
    try:  # through the held handle on the verified folder (see numba.cache)
        current = read_file(_dir_fd, name).decode()
    except (OSError, UnicodeDecodeError):
        current = None
    if current != source:  # missing, damaged or from another arrayx: replaced
        try:
            write_file(_dir_fd, name, source.encode())  # atomic: a concurrent process sees the old or the new file
        except OSError:  # a read-only folder without this kernel: compile it in memory
            return None
    return folder / name


def _load(stem: str, source: str):
    """The ``kernel`` of the generated module ``stem``, with Numba's disk cache where there is a file.

    The module is compiled from the source text itself (no ``.pyc``: nothing but Numba's own
    files is read back from the cache folder), under the file's name so that Numba can cache it.
    """
    from arrayx.executors.numba import layer as _numba_layer

    _numba_layer.numba()  # a parallel kernel starts Numba's threads: the layer set first
    path = _source_file(stem, source)
    name = f"_arrayx_numba_{stem}"
    module = types.ModuleType(name)
    module.__file__ = str(path) if path is not None else f"<arrayx kernel {stem}>"
    sys.modules[name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    kernel = module.kernel
    if path is not None:
        from arrayx.executors.numba import cache as _numba_cache

        _numba_cache.attach(kernel)
    return kernel


def _cached(key: tuple, make):
    fn = _kernels.get(key)
    if fn is None:
        with _lock:
            fn = _kernels.get(key)
            if fn is None:
                stem, source = make()
                fn = _kernels[key] = _load(stem, source)
    return fn


def _jit(parallel: bool, fastmath: set | None = None) -> str:
    """The decorator line (every kernel is compiled with ``parallel=False``: threads come from ``numba.team``)."""
    fm = sorted(fastmath or {"contract"})
    return _JIT.format(parallel=parallel, fastmath="{" + ", ".join(repr(f) for f in fm) + "}")


def _indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())


# -- kernels --------------------------------------------------------------------------------------

def _operands(form: str, names=("x", "y"), values=("a", "b")) -> tuple[str, str]:
    """(chunk slices, per-element loads) for operands given as vectors ("v") or scalars ("s")."""
    slices, loads = [], []
    for f, name, value in zip(form, names, values):
        if f == "v":
            slices.append(f"{name}c = {name}[c0:c1]")
            loads.append(f"{value} = {name}c[i]")
        else:
            loads.append(f"{value} = {name}")
    return "\n".join(slices), "\n".join(loads)


def _team_kernel(stem: str, what: str, dtype: np.dtype, args: str, body: str):
    """A kernel ``(claims, *args, out)`` whose chunks the threads entering it claim (see _TEAM_KERNEL):
    compiled for one thread (no parfors); ``NumbaExecutor._call`` runs it alone or on the team."""
    from arrayx.executors.numba.vectors import kernel_line

    text = _TEAM_KERNEL.format(jit=_jit(False), args=args, width=kernel_line(), chunk=_CHUNK, body=body)
    return _cached(("team", stem), lambda: (stem, _HEADER.format(what=what, dtype=dtype.name, acc=dtype.name) + text))


def elementwise_kernel(op: str, dtype: np.dtype, form: str, parallel: bool = True):
    """Kernel ``(claims, x[, y], out)`` of a UNARY (form "v") or BINARY operation (forms "vv", "vs", "sv":
    vector or scalar operands) on flat arrays of ``dtype`` (``parallel``: unused, see _team_kernel)."""
    bits = dtype.itemsize * 8
    expr = (UNARY[op] if form == "v" else BINARY[op])[2].replace("{bits}", str(bits))
    slices, loads = _operands(form)
    fields = dict(expr=expr, slices=_indent(slices, 8), loads=_indent(loads, 12))
    if op in FIXUPS:
        cond, fix = (e.replace("{bits}", str(bits)) for e in FIXUPS[op])
        body = _ELEMENTWISE_FIXUP.format(**fields, loads_fix=_indent(loads, 16), fix_cond=cond, fix_expr=fix)
    else:
        body = _ELEMENTWISE.format(**fields)
    return _team_kernel(f"{op}_{form}_{dtype.name}", f"{op}, {form}, {dtype.name}", dtype,
                        "x, " if form == "v" else "x, y, ", body)


#: (row setup, per-element loads) of a matrix-vector kernel's operands: "m" the matrix, "r" a vector
#: with one value per column, "c" one per row
_VECTOR_OPERANDS = {
    "m": ("{n}r = {n}[r]", "{v} = {n}r[i]"),
    "r": ("", "{v} = {n}[i]"),
    "c": ("{v} = {n}[r]", ""),
}

#: elements per chunk of a matrix-vector kernel (whole rows: at least one)
VECTOR_CHUNK = _CHUNK


def vector_step(inner: int) -> int:
    """Rows per chunk of a matrix-vector kernel whose rows have ``inner`` elements."""
    return max(1, VECTOR_CHUNK // max(inner, 1))


def vector_kernel(op: str, dtype: np.dtype, form: str, parallel: bool = True):
    """Kernel ``(claims, x, y, step, out)`` of a BINARY operation between a C-contiguous matrix
    (rows, inner) and a vector: form "mr"/"mc" (matrix op vector with one value per column / per
    row) or "rm"/"cm" (vector op matrix); ``out`` is (rows, inner), chunks are ``step`` rows."""
    setups, loads = [], []
    for f, name, value in zip(form, ("x", "y"), ("a", "b")):
        setup, load = _VECTOR_OPERANDS[f]
        if setup:
            setups.append(setup.format(n=name, v=value))
        if load:
            loads.append(load.format(n=name, v=value))
    text = _VECTOR_KERNEL.format(jit=_jit(False), width=vector_kernel_line(), row_setup=_indent("\n".join(setups), 12),
                                 loads=_indent("\n".join(loads), 16), expr=BINARY[op][2])
    stem = f"{op}_{form}_{dtype.name}"
    return _cached(("vector", stem), lambda: (stem, _HEADER.format(what=f"{op}, {form}, {dtype.name}", dtype=dtype.name,
                                                                   acc=dtype.name) + text))


def vector_kernel_line() -> str:
    from arrayx.executors.numba.vectors import kernel_line

    return kernel_line()


def where_kernel(dtype: np.dtype, form: str, parallel: bool = True):
    """Kernel ``(claims, cond, x, y, out)`` choosing x where cond else y; form "vv", "vs", "sv" or "ss"."""
    slices, loads = _operands("v" + form, ("cond", "x", "y"), ("c", "a", "b"))
    body = _ELEMENTWISE.format(expr="a if c else b", slices=_indent(slices, 8), loads=_indent(loads, 12))
    return _team_kernel(f"where_{form}_{dtype.name}", f"where, {form}, {dtype.name}", dtype, "cond, x, y, ", body)


def clip_kernel(dtype: np.dtype, bounds: str, parallel: bool = True):
    """Kernel ``(claims, x, lo, hi, out)`` clipping to scalar bounds; bounds "both", "lo" or "hi"
    (the unused bound is passed as a dummy scalar of ``dtype``)."""
    lo_nan, lo_name, hi_nan, hi_name, first, second = _CLIP[bounds]
    body = _CLIP_TEMPLATE.format(lo_nan=lo_nan, lo_name=lo_name, hi_nan=hi_nan, hi_name=hi_name, first=first,
                                 second=second)
    return _team_kernel(f"clip_{bounds}_{dtype.name}", f"clip, {bounds}, {dtype.name}", dtype, "x, lo, hi, ", body)


def reduction_group(outer: int, nsplit: int, step: int, inner: int) -> tuple[int, int]:
    """(group, chunks): work items per chunk of a reduction kernel, so that a chunk reduces at least
    ``_CHUNK`` elements (one claim per few microseconds of work), and the chunks of all items."""
    group = max(1, _CHUNK // max(1, step * inner))
    items = outer * nsplit
    return group, -(-items // group)


def reduction_kernel(op: str, dtype: np.dtype, acc: np.dtype, parallel: bool = True):
    """Kernel ``(claims, x, step, group, part)`` of "sum", "prod", "max" or "min" over axis 1 of x
    (outer, red, inner), accumulating in ``acc``; part[o, s, :] gets the result of rows s*step ... of
    slab o.  A float sum also takes ``pabs`` (like part), which gets the sums of absolute values.
    Run alone or on the team (``numba.team``; chunks of ``group`` work items, see ``reduction_group``):
    ``parallel`` is unused, the same kernel serves both."""
    def make():
        float_sum = op == "sum" and acc.kind == "f"
        extra_out = ", pabs" if float_sum else ""
        if op in ("sum", "prod"):
            sym, init = ("+", "0") if op == "sum" else ("*", "1")
            # a product is taken in order (one block), as NumPy does
            row = _with_abs(_ROW_FOLD, float_sum).format(init=init, block=_BLOCK if op == "sum" else "row.size",
                                                          op=sym, load="v = A(blk[k])")
            cols = _with_abs(_COLUMNS_FOLD, float_sum).format(init=init, op=sym, col_setup="", load="v = A(xr[j])")
            # reassociation lets LLVM vectorise float sums
            fastmath = {"contract", "reassoc"} if float_sum else None
        else:
            lane = _PICK_LANE[op]
            count = "nans |= v != v" if dtype.kind == "f" else ""
            lanes = "\n".join(f"                v = row[k + {i}]\n                a{i} = {lane.format(a=f'a{i}')}"
                              + (f"\n                {count}" if count else "") for i in range(8))
            join = "\n".join(f"            v = a{i}\n            a0 = {lane.format(a='a0')}" for i in range(1, 8))
            row = _ROW_SELECT.format(lanes=lanes, pick0=lane.format(a="a0"), join=join,
                                     count=f"                {count}" if count else "",
                                     nan_scan=_NAN_SCAN if count else "")
            cols = _COLUMNS_SELECT.format(pick=_PICK[op].format(a="a"))
            fastmath = None
        text = _REDUCTION.format(jit=_jit(False, fastmath), extra="", extra_out=extra_out, row=_indent(row, 4),
                                 columns=_indent(cols, 4))
        stem = f"reduce_{op}_{dtype.name}_{acc.name}"
        return stem, _HEADER.format(what=f"{op} reduction, {dtype.name} -> {acc.name}",
                                    dtype=dtype.name, acc=acc.name) + text
    return _cached(("reduce", op, dtype, acc), make)


def sqdev_kernel(dtype: np.dtype, acc: np.dtype, parallel: bool = True):
    """Kernel ``(claims, x, mean, step, group, part)``: sums of (x - mean)**2 over axis 1 of x (outer,
    red, inner), mean[o, j] per output element, accumulating in ``acc`` (the second pass of
    var/std); run as ``reduction_kernel``'s kernels are."""
    def make():
        row = _with_abs(_ROW_FOLD, False).format(init="0", block=_BLOCK, op="+",
                                                 load="d = A(blk[k]) - m\n                    v = d * d")
        row = "            m = mean[o, 0]\n" + row
        cols = _with_abs(_COLUMNS_FOLD, False).format(init="0", op="+", col_setup="                m = mean[o]",
                                                      load="d = A(xr[j]) - m[j]\n                    v = d * d")
        text = _REDUCTION.format(jit=_jit(False, {"contract", "reassoc"}), extra="mean, ", extra_out="",
                                 row=_indent(row, 4), columns=_indent(cols, 4))
        stem = f"reduce_sqdev_{dtype.name}_{acc.name}"
        return stem, _HEADER.format(what=f"sum of squared deviations, {dtype.name} -> {acc.name}",
                                    dtype=dtype.name, acc=acc.name) + text
    return _cached(("sqdev", dtype, acc), make)


# The C library's log through a symbol LLVM does not know (see executors/libm.py): never vectorised or replaced.
_LIBM_LOG = '''
from numba import types

from arrayx.executors import libm as _libm

_libm.register_log_symbol()
c_log = types.ExternalFunction(_libm.LOG_SYMBOL, types.float64(types.float64))


@{jit}
def kernel(x, out):
    for i in range(x.size):
        out[i] = c_log(x[i])
'''


def libm_log_kernel():
    """Kernel ``(x, out)``: out[i] = the C library's log(x[i]) on flat float64 arrays, one thread."""
    def make():
        return "libm_log_float64", _HEADER.format(what="libm log", dtype="float64", acc="float64") + \
            _LIBM_LOG.format(jit=_jit(False))
    return _cached(("libm_log",), make)
