"""``arrayx.Array``: the standard's array object, defined here and documented here.

The class lives at the bottom of arrayx because tracers are Arrays too (a trace keeps its state in
``_buf``), and the eager dispatch path (``arrayx.core.primitives``) wraps every result in one.  Its
methods are the namespace's: they bind primitives through the public functions, which live above
the core, so ``arrayx/api/_array.py`` writes them in a class body that :func:`define_array_methods`
installs here when ``arrayx`` is imported.  ``help(arrayx.Array)`` lists them all.
"""
from __future__ import annotations

__all__ = ["Array", "define_array_methods"]


class Array:
    """An n-dimensional array of one dtype, living on one executor (NumPy, Numba, JAX, Dask, CuPy).

    Arrays are never constructed directly: every function of the namespace returns one
    (``arrayx.asarray``, the creation functions, operations on other arrays).  An Array
    implements every attribute, method and operator of the standard's array object
    (``shape``, ``dtype``, ``device``, ``mT``, ``x + y``, ``x @ y``, ``x[key]``,
    ``x[key] = v``, ``x.at[key].set(v)``, ``to_device``, ``__dlpack__``,
    ``__array_namespace__``), plus ``__array__`` so NumPy and SciPy convert it with
    ``numpy.asarray``.  Operations run on the executor of their arrays; mixing executors
    raises a TypeError that names both.

    >>> import arrayx as ax
    >>> x = ax.asarray([[1.0, 2.0], [3.0, 4.0]])
    >>> x.shape, x.dtype, x.device
    ((2, 2), dtype('float64'), Device('numpy:cpu'))
    >>> y = x @ x.T + 1
    >>> y[0]
    Array([ 6., 12.], dtype=float64, device=numpy:cpu)
    >>> float(y.at[0, 0].set(0.0)[0, 0])
    0.0
    >>> type(y) is ax.Array
    True

    Layout: ``_buf`` is the executor's own buffer (a ``numpy.ndarray``, ``jax.Array``,
    ``dask.array.Array``...) and ``_ex`` the executor.  A :class:`~arrayx.core.tracers.Tracer`
    (a value inside ``grad``, ``vmap``, ``jit``...) is a subclass with the same layout whose
    ``_buf`` holds its trace's state, so in-place code (``x[i] = v``, ``x += y``) is
    functionalised by rebinding the wrapper, even when a concrete array receives a traced value.
    Two more slots, unset on almost every array, give views of buffers that cannot be written
    in place (JAX, Dask, tracers) NumPy's semantics (``arrayx/api/_views.py``):
    ``_view_of`` is ``(base, key)`` for an array made by ``base[key]`` with a basic key, and
    ``_views`` a list of weak references to the live views made of this array.
    """

    __slots__ = ("_buf", "_ex", "_view_of", "_views", "__weakref__")


def define_array_methods(methods: type) -> type:
    """Install the attributes defined in the class body ``methods`` on :class:`Array`.

    ``arrayx/api/_array.py`` writes the standard's methods in such a body: they route
    through the namespace's functions, which live above the core.
    """
    for name, value in vars(methods).items():
        if name not in ("__dict__", "__weakref__", "__module__", "__qualname__", "__doc__"):
            setattr(Array, name, value)
    return methods
