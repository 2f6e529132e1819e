"""The bottom layer of arrayx: what every other package builds on, and nothing else.

- ``config``: every ``ARRAYX_*`` environment variable in one table (read with ``config.get``);
- ``array``: :class:`Array`'s layout (an executor buffer and its executor); the standard's methods
  are installed on it by ``arrayx.api`` (``define_array_methods``);
- ``primitives``: :class:`Primitive`, ``bind``, the trace context and :class:`Trace`, the eager
  dispatch path (``run_eager``) and its hooks;
- ``tracers``: abstract values (:class:`ShapeDtypeStruct`), :class:`Tracer`,
  :class:`CallPrimitive`, ``bind_with`` and ``abstract_eval``;
- ``graph``: the Graph IR (``Graph``, ``Equation``, ``Var``, ``Literal``); ``keys``: exact cache keys;
- ``executor``: :class:`Device`, the :class:`Executor` protocol, the registry and executor selection;
- ``lowering``: the straight-line lowering driver (a graph to Python over one executor's table);
- ``float_checks``: ``debug_nans`` / ``debug_infs`` (a checking trace, and the check the lowering
  driver inserts after each equation);
- ``axis_env``: the named axes bound by ``vmap(axis_name=)`` and ``pmap``.

``arrayx.core`` imports only the standard library, NumPy and ``arrayx.core`` itself (a test
parses every import statement, function-local ones too).  Where behaviour belongs to a higher
layer, the core holds a hook that layer fills when it is imported (``primitives.eager_hook``
for sharding records).
"""

from arrayx.core import lowering as _lowering  # noqa: E402,F401  (sets Executor.lower's default)
