"""The CuPy lowering's kernels run on the CPU: the same generated code, compiled by the C compiler.

``CpuKernels`` stands in for ``cupy.fusion.CupyKernels``: it takes the same ``ElementwiseSpec``/
``ReductionSpec`` and wraps their code (``PRELUDE`` + the region's functions, the operation or
map/reduce/post expressions, unchanged) in loops that do what CuPy's kernel templates do per
element (elementwise: load each array argument, run the operation, store the outputs; reduction:
map each element, storing what the map writes into its writable inputs, join partial results,
post-map into the outputs), compiled with ``cc`` into one
shared library per batch and called through ctypes.  Reductions join partial results of ``CHUNK``
elements, as CuPy's threads and its tree do, so the join of two non-empty partials is exercised.

``cxx_syntax_check`` compiles the code as C++ with the prelude's CUDA branch (CUDA's keywords and
intrinsics declared as plain C++), inside CuPy's own kernel shapes (references to the elements,
``static_cast`` to the reduce type); ``nvrtc_check`` compiles the same with NVRTC itself, CUDA's
runtime compiler (the one CuPy calls), where its library is installed (the ``nvidia-cuda-nvrtc-cu12``
wheel: it compiles to PTX without a GPU).

What stays unverified without a GPU: CuPy's own kernel templates around the code (emulated here),
its parsing of the parameter lists, its broadcasting, indexing and launch, and the GPU's math
functions' last-bit results.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import pathlib
import shutil
import subprocess

import numpy as np

from arrayx.executors.cupy.fusion import CTYPES, ElementwiseSpec, PRELUDE

CC = shutil.which("cc") or shutil.which("gcc")
CXX = shutil.which("c++") or shutil.which("g++")
#: ISO C without contraction into fused multiply-adds (the kernels run with --fmad=false on the GPU)
CFLAGS = ["-std=c11", "-O2", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared",
          "-Werror=implicit-function-declaration", "-Werror=int-conversion", "-Werror=incompatible-pointer-types"]
CHUNK = 7  # elements per partial result of a reduction (odd: partials of unequal counts are joined)

_CTYPES = {np.dtype(k): v for k, v in {
    "bool": ctypes.c_bool, "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64, "float32": ctypes.c_float, "float64": ctypes.c_double}.items()}


def _written(spec) -> tuple:
    return getattr(spec, "written", ())


def _signature(spec, scalars: frozenset) -> list[str]:
    ins = [f"{CTYPES[np.dtype(dt)]} {n}" if n in scalars else
           f"{'' if n in _written(spec) else 'const '}{CTYPES[np.dtype(dt)]} *_raw_{n}" for n, dt in spec.in_params]
    return ins + [f"{CTYPES[np.dtype(dt)]} *_raw_{n}" for n, dt in spec.out_params]


def _loads(spec, scalars, at: str) -> list[str]:
    """Each array input's element (a written one: a local the map writes, stored after it)."""
    return [f"{CTYPES[np.dtype(dt)]} {n};" if n in _written(spec) else f"const {CTYPES[np.dtype(dt)]} {n} = _raw_{n}[{at}];"
            for n, dt in spec.in_params if n not in scalars]


def _outs(spec) -> tuple[list[str], list[str]]:
    return ([f"{CTYPES[np.dtype(dt)]} {n};" for n, dt in spec.out_params],
            [f"_raw_{n}[{'{at}'}] = {n};" for n, _ in spec.out_params])


def _c_loop(spec, scalars: frozenset, fname: str) -> str:
    """A C function running ``spec`` over flat, C-ordered arrays (CuPy's loop, one thread)."""
    decls, stores = _outs(spec)
    if spec.__class__ is ElementwiseSpec:
        body = [*_loads(spec, scalars, "i"), *decls, spec.operation, *(s.format(at="i") for s in stores)]
        return "\n".join([f"void {fname}({', '.join(['long long n'] + _signature(spec, scalars))}) {{",
                          "    for (long long i = 0; i < n; i++) {", *(f"        {s}" for s in body), "    }", "}", ""])
    t = spec.reduce_type
    inner = [*_loads(spec, scalars, "j * nred + k"), f"{t} _a = {spec.map_expr};", "_c = REDUCE(_c, _a);",
             *(f"_raw_{n}[j * nred + k] = {n};" for n in spec.written)]
    return "\n".join([
        f"#define REDUCE(a, b) ({spec.reduce_expr})", f"#define POST_MAP(a) ({spec.post_map_expr})",
        f"void {fname}({', '.join(['long long nout', 'long long nred'] + _signature(spec, scalars))}) {{",
        "    for (long long j = 0; j < nout; j++) {",
        f"        {t} _s = {spec.identity};",
        f"        for (long long k0 = 0; k0 < nred; k0 += {CHUNK}) {{",
        f"            {t} _c = {spec.identity};",
        f"            long long k1 = k0 + {CHUNK} < nred ? k0 + {CHUNK} : nred;",
        "            for (long long k = k0; k < k1; k++) {", *(f"                {s}" for s in inner), "            }",
        "            _s = REDUCE(_s, _c);", "        }",
        *(f"        {d}" for d in decls), "        POST_MAP(_s);", *(f"        {s.format(at='j')}" for s in stores),
        "    }", "}", "#undef REDUCE", "#undef POST_MAP", ""])


class CpuKernels:
    """Launches specs as C on the CPU (see the module doc); ``build`` compiles many in one go."""

    xp = np
    compile_errors = ()  # a kernel that does not compile fails the test (no fallback)

    def __init__(self, folder: pathlib.Path):
        self.folder = pathlib.Path(folder)
        self.functions: dict = {}  # (spec name, scalar params) -> ctypes function
        self.compiles = 0  # calls of the C compiler

    def prepare(self, spec) -> None:
        pass  # compiled by build() or on first launch (which arguments are scalars is known then)

    def build(self, runners) -> None:
        """Compile every spec of ``runners`` (fused regions) not compiled yet, in one library."""
        todo = {}
        for r in runners:
            scalars = _scalars(r)
            for spec in r.specs:
                mine = scalars & {n for n, _ in spec.in_params}
                if (spec.name, mine) not in self.functions:
                    todo[spec.name, mine] = spec
        if todo:
            self._compile(todo)

    def _compile(self, todo: dict) -> None:
        parts, names = [PRELUDE], {}
        seen = set()
        for (name, scalars), spec in todo.items():
            if spec.code not in seen:  # a region's elementwise and reduction specs share its code
                seen.add(spec.code)
                parts.append(spec.code[len(PRELUDE):])
            fname = f"{name}_cpu_{hashlib.sha256(repr(sorted(scalars)).encode()).hexdigest()[:8]}"
            names[name, scalars] = fname
            parts.append(_c_loop(spec, scalars, fname))
        source = "\n".join(parts)
        stem = "k" + hashlib.sha256(source.encode()).hexdigest()[:16]
        c_file, so_file = self.folder / f"{stem}.c", self.folder / f"{stem}.so"
        if not so_file.exists():
            c_file.write_text(source)
            out = subprocess.run([CC, *CFLAGS, str(c_file), "-o", str(so_file), "-lm"], capture_output=True, text=True)
            self.compiles += 1
            if out.returncode != 0:
                raise RuntimeError(f"cc failed on {c_file}:\n{out.stderr[-4000:]}")
        lib = ctypes.CDLL(str(so_file))
        for (name, scalars), fname in names.items():
            spec = todo[name, scalars]
            fn = getattr(lib, fname)
            fn.restype = None
            head = [ctypes.c_longlong] * (1 if spec.__class__ is ElementwiseSpec else 2)
            fn.argtypes = head + [_CTYPES[np.dtype(dt)] if n in scalars else ctypes.c_void_p
                                  for n, dt in spec.in_params] + [ctypes.c_void_p] * len(spec.out_params)
            self.functions[name, scalars] = fn

    def _function(self, spec, args):
        scalars = frozenset(n for (n, _), a in zip(spec.in_params, args) if not isinstance(a, np.ndarray))
        if (spec.name, scalars) not in self.functions:
            self._compile({(spec.name, scalars): spec})
        return self.functions[spec.name, scalars]

    @staticmethod
    def _pointer(a: np.ndarray):
        assert a.flags.c_contiguous
        return a.ctypes.data_as(ctypes.c_void_p)

    def elementwise(self, spec: ElementwiseSpec, args: list, outs: list) -> None:
        fn = self._function(spec, args)
        shape = outs[0].shape
        flat = [a if not isinstance(a, np.ndarray) else np.ascontiguousarray(np.broadcast_to(a, shape))
                for a in args]
        fn(int(np.prod(shape)), *[self._pointer(a) if isinstance(a, np.ndarray) else a for a in flat],
           *[self._pointer(o) for o in outs])

    def reduction(self, spec, args: list, outs: list, axes: tuple) -> None:
        fn = self._function(spec, args)
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        ndim = arrays[0].ndim
        nred = int(np.prod([arrays[0].shape[i] for i in axes]))
        keep = [i for i in range(ndim) if i not in axes]
        flat = []
        for a in args:  # the reduced axes last: one row of nred elements per output element
            flat.append(np.ascontiguousarray(np.transpose(a, keep + list(axes))).reshape(-1, nred)
                        if isinstance(a, np.ndarray) else a)
        nout = int(np.prod([arrays[0].shape[i] for i in keep]))
        fn(nout, nred, *[self._pointer(a) if isinstance(a, np.ndarray) else a for a in flat],
           *[self._pointer(o) for o in outs])
        for (n, _), a, f in zip(spec.in_params, args, flat):  # what the map wrote, back in place
            if n in spec.written:
                np.transpose(a, keep + list(axes))[...] = f.reshape(np.transpose(a, keep + list(axes)).shape)


_CXX_STUBS = r"""
#define __CUDACC__ 1
#define __device__
#define __global__
#define __forceinline__ inline
static inline float __int_as_float(int i) { float f; __builtin_memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) { double d; __builtin_memcpy(&d, &i, 8); return d; }
#include <cmath>
"""


def _scalars(runner) -> frozenset:
    """The kernel parameters of ``runner``'s region passed by value (its literals)."""
    return frozenset(f"x{k}" for k, op in enumerate(runner.plan.operands) if op.value is not None) | {"xn"}


def _cxx_kernel(spec, scalars: frozenset) -> str:
    """``spec`` in the shape of CuPy's kernel templates (element references, static_cast, the
    reduce type's functional cast), as C++."""
    arrays = [(n, dt) for n, dt in spec.in_params if n not in scalars]
    const = {n: "" if n in _written(spec) else "const " for n, _ in arrays}  # CuPy's _non_const inputs
    params = ", ".join([f"{CTYPES[np.dtype(dt)]} {n}" for n, dt in spec.in_params if n in scalars]
                       + [f"{const[n]}{CTYPES[np.dtype(dt)]} *_raw_{n}" for n, dt in arrays]
                       + [f"{CTYPES[np.dtype(dt)]} *_raw_{n}" for n, dt in spec.out_params] + ["long long n"])
    refs_in = " ".join(f"{const[n]}{CTYPES[np.dtype(dt)]} &{n} = _raw_{n}[i];" for n, dt in arrays)
    refs_out = " ".join(f"{CTYPES[np.dtype(dt)]} &{n} = _raw_{n}[i];" for n, dt in spec.out_params)
    if spec.__class__ is ElementwiseSpec:
        return (f"__global__ void {spec.name}({params}) {{\n"
                f"  for (long long i = 0; i < n; i++) {{ {refs_in} {refs_out} {spec.operation}; }}\n}}\n")
    return (f"#define REDUCE(a, b) ({spec.reduce_expr})\n#define POST_MAP(a) ({spec.post_map_expr})\n"
            f"typedef {spec.reduce_type} _type_reduce;\n"
            f"__global__ void {spec.name}({params}) {{\n"
            f"  _type_reduce _s = _type_reduce({spec.identity});\n"
            f"  for (long long i = 0; i < n; i++) {{ {refs_in} _type_reduce _a = static_cast<_type_reduce>({spec.map_expr});"
            f" _s = REDUCE(_s, _a); }}\n"
            f"  {{ long long i = 0; {refs_out} POST_MAP(_s); }}\n}}\n#undef REDUCE\n#undef POST_MAP\n")


def _kernels_source(runners) -> str:
    """The code and kernels of ``runners`` (fused regions) as one C++ translation unit."""
    codes, kernels = {}, []
    for r in runners:
        for spec in r.specs:
            codes.setdefault(spec.code, None)
            # a namespace per kernel: each is its own module on the GPU (its _type_reduce, its macros)
            kernels.append(f"namespace k{len(kernels)} {{\n{_cxx_kernel(spec, _scalars(r))}}}\n")
    # each region's code after the first: its prelude is skipped by the AX_PRELUDE guard
    return "\n".join(codes) + "\n" + "\n".join(kernels)


def cxx_syntax_check(runners, folder: pathlib.Path) -> None:
    """Compile (syntax only) the code and kernels of ``runners`` as C++ with the prelude's CUDA branch."""
    source = _CXX_STUBS + _kernels_source(runners)
    path = pathlib.Path(folder) / ("x" + hashlib.sha256(source.encode()).hexdigest()[:16] + ".cpp")
    path.write_text(source)
    out = subprocess.run([CXX, "-std=c++17", "-fsyntax-only", "-Wall", "-Wno-unused-variable",
                          "-Wno-unused-but-set-variable", "-Werror=narrowing", str(path)], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"c++ failed on {path}:\n{out.stderr[-4000:]}")


# -- NVRTC (CUDA's runtime compiler, the one CuPy calls), where its library is installed ---------------

def nvrtc_library() -> str | None:
    """The path of libnvrtc: the nvidia-cuda-nvrtc wheel's, else the system's (no GPU needed to compile)."""
    try:
        import nvidia.cuda_nvrtc as wheel

        found = sorted(pathlib.Path(list(wheel.__path__)[0], "lib").glob("libnvrtc.so.*"))
        if found:
            return str(found[0])
    except ImportError:
        pass
    return ctypes.util.find_library("nvrtc")


def nvrtc_compile(source: str, options) -> tuple[str, str]:
    """(PTX, log) of ``source`` compiled by NVRTC with ``options``; RuntimeError with the log on failure."""
    lib = ctypes.CDLL(nvrtc_library())
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"fused.cu", 0, None, None) != 0:
        raise RuntimeError("nvrtcCreateProgram failed")
    try:
        opts = [o.encode() for o in options]
        result = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        if result != 0:
            raise RuntimeError(f"NVRTC failed ({result}):\n{log.value.decode()[-4000:]}")
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(prog, ptx)
        return ptx.value.decode(), log.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def nvrtc_check(runners, options, arch: str = "compute_90") -> tuple[str, str]:
    """The code and kernels of ``runners`` compiled by NVRTC for ``arch`` (PTX, log)."""
    return nvrtc_compile(_kernels_source(runners), [f"--gpu-architecture={arch}", "-std=c++17", *options])
