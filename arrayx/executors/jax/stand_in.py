"""What the jax executor's deferred buffers share: stand-ins for a ``jax.Array`` whose value is
computed when first needed (``materialize``) and kept.  :class:`permuted.Permuted` (a transpose
not yet taken) and :class:`fused.Pending` (recorded elementwise operations) say what they can
without computing (shape, dtype, devices); everything else reads the computed array."""
from __future__ import annotations

from arrayx.executors.jax import x64 as _x64

_jax = None  # JAX, set by load


def load(jax) -> None:
    global _jax
    _jax = jax


class StandIn:
    """The array protocol of a deferred buffer, through ``materialize()`` (a subclass's)."""

    __slots__ = ()

    def __getitem__(self, key):
        return self.materialize()[key]

    def __len__(self) -> int:
        return self.shape[0]

    def __iter__(self):
        return iter(self.materialize())

    def __dlpack__(self, **kwargs):
        return self.materialize().__dlpack__(**kwargs)

    def __getattr__(self, name):
        # any other jax.Array attribute or method (``at``, ``sharding``, ``astype``, ...); a slot not
        # yet set (a copy being made) is not computed for
        if name.startswith("__") or name in type(self).__slots__:
            raise AttributeError(name)
        return getattr(self.materialize(), name)

    def __reduce__(self):
        return (_rebuild, (self.__array__(),))


@_x64.in_x64  # a float64 buffer unpickles as float64, whatever the caller's JAX setting
def _rebuild(host):
    return _jax.numpy.asarray(host)
