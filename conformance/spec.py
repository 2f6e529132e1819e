"""The standard's names and signatures (2025.12), for the namespace and coverage tests.

Read from ``spec_2025_12.json``, a snapshot of the official stubs (``array_api_stubs._2025_12``,
the data-apis/array-api repository) committed next to this file, so that every test reads
only the repository.  Check or refresh the snapshot against the stubs:

    python -m conformance.spec --check --stubs /path/to/array-api/src
    python -m conformance.spec --write --stubs /path/to/array-api/src

(``--stubs`` may be left out when ``ARRAY_API_STUBS`` names that folder or the
``array_api_stubs`` package is importable; the folder is ``src`` of a clone of
data-apis/array-api, or ``array-api/src`` inside a clone of data-apis/array-api-tests.)

A signature is a list of ``[name, kind, default]`` with ``kind`` an ``inspect.Parameter``
kind name and ``default`` the ``repr`` of the default (``"<required>"`` when there is none).
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import pathlib
import sys

VERSION = "2025.12"
HERE = pathlib.Path(__file__).parent
SNAPSHOT = HERE / "spec_2025_12.json"
#: the environment variable that names the folder holding the ``array_api_stubs`` package
STUBS_ENV = "ARRAY_API_STUBS"
REQUIRED = "<required>"

#: stub modules whose ``__all__`` names the main namespace must have
MAIN_MODULES = (
    "constants", "creation_functions", "data_type_functions", "elementwise_functions",
    "indexing_functions", "linear_algebra_functions", "manipulation_functions",
    "searching_functions", "set_functions", "sorting_functions", "statistical_functions",
    "utility_functions",
)
EXTENSIONS = ("linalg", "fft")
CONSTANTS = ("e", "inf", "nan", "newaxis", "pi")
DTYPE_NAMES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
)


def signature_of(fn) -> list:
    """``[[name, kind, default repr], ...]`` for ``fn`` (``self`` dropped)."""
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.name == "self":
            continue
        default = REQUIRED if p.default is inspect.Parameter.empty else repr(p.default)
        out.append([p.name, p.kind.name, default])
    return out


def from_stubs(stubs_path: str | None = None) -> dict:
    """The spec data read from the stubs package (ImportError, naming --stubs, when it cannot be found)."""
    path = stubs_path or os.environ.get(STUBS_ENV)
    if path:
        if not os.path.isdir(path):
            raise ImportError(f"conformance.spec: the stubs folder {path!r} does not exist")
        if path not in sys.path:
            sys.path.insert(0, path)
    pkg = f"array_api_stubs._{VERSION.replace('.', '_')}"
    try:
        importlib.import_module(pkg)
    except ImportError as e:
        raise ImportError(
            f"conformance.spec: cannot import {pkg} ({e}); pass --stubs with the 'src' folder of a clone of "
            f"data-apis/array-api (or set {STUBS_ENV})") from e

    def mod(name):
        return importlib.import_module(f"{pkg}.{name}")

    data: dict = {"version": VERSION, "namespaces": {}, "signatures": {}, "array": {}, "info": {}}
    main: list[str] = []
    for m in MAIN_MODULES:
        module = mod(m)
        for name in module.__all__:
            main.append(name)
            obj = getattr(module, name)
            if callable(obj):
                data["signatures"][name] = signature_of(obj)
    info = mod("info")
    main.append("__array_namespace_info__")
    data["signatures"]["__array_namespace_info__"] = signature_of(info.__array_namespace_info__)
    data["namespaces"]["main"] = main
    for ext in EXTENSIONS:
        module = mod(ext)
        data["namespaces"][ext] = list(module.__all__)
        for name in module.__all__:
            data["signatures"][f"{ext}.{name}"] = signature_of(getattr(module, name))
    for name in info.__all__:
        if name != "__array_namespace_info__":
            data["info"][name] = signature_of(getattr(info, name))
    cls = mod("array_object")._array
    for name, member in vars(cls).items():
        if name == "__init__" or (name.startswith("_") and not name.startswith("__")):
            continue
        if isinstance(member, property):
            data["array"][name] = "property"
        elif callable(member):
            data["array"][name] = signature_of(member)
    return data


def load() -> dict:
    """The spec data, from the committed snapshot (tests read no file outside the repository;
    ``python -m conformance.spec --check`` compares the snapshot with the stubs)."""
    return load_snapshot()


def load_snapshot() -> dict:
    return json.loads(SNAPSHOT.read_text())


def stubs_available() -> bool:
    try:
        from_stubs()
    except ImportError:
        return False
    return True


def all_functions(data: dict | None = None) -> list[str]:
    """Every function of the standard as ``name`` / ``linalg.name`` / ``fft.name`` (no constants)."""
    data = data or load()
    out = [n for n in data["namespaces"]["main"] if n not in CONSTANTS]
    for ext in EXTENSIONS:
        out += [f"{ext}.{n}" for n in data["namespaces"][ext]]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.spec", description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help=f"rewrite {SNAPSHOT.name} from the stubs")
    p.add_argument("--check", action="store_true", help=f"exit 1 unless {SNAPSHOT.name} equals the stubs")
    p.add_argument("--stubs", default=None,
                   help=f"folder that contains the array_api_stubs package (default: ${STUBS_ENV}, else importable)")
    args = p.parse_args(argv)
    try:
        data = from_stubs(args.stubs)
    except ImportError as e:
        p.error(str(e))
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if args.check:
        current = data == load_snapshot()
        print(f"{SNAPSHOT.name} is {'current' if current else 'stale: refresh it with --write'}")
        return 0 if current else 1
    if args.write:
        SNAPSHOT.write_text(text)
        print(f"wrote {SNAPSHOT} ({len(all_functions(data))} functions)")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
