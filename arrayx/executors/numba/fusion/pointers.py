"""Element loads and stores by flat index, for the fused kernels' flat loops (``numba.fusion.lowering``).

A flat kernel reads and writes its (C-contiguous) arrays with these, indexed from the range's
start: no slice per array (each one is typed, lowered and optimised: ~40% of a small kernel's
compile time) and no wrap-around test on the index (these have none: the kernel's indices are
in range by construction), so LLVM vectorises the loop as it did the slices'.  An output written
into an operand's buffer is stored through that operand's own argument (one pointer: two that
may overlap fail LLVM's runtime alias check and run the scalar loop).  Values go through the
array's data model, so a bool element is a byte in memory and a bool in the kernel.

Importing this module imports Numba: only the generated kernels import it.
"""
from __future__ import annotations

from numba import types
from numba.extending import intrinsic


def _element_pointer(context, builder, arrty, arr, index):
    data = context.make_array(arrty)(context, builder, value=arr).data
    return builder.gep(data, [index], inbounds=True)


@intrinsic
def load(typingctx, arr, index):
    """``arr``'s element ``index`` of its flat (C-order) data."""
    if not (isinstance(arr, types.Array) and arr.layout == "C" and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        ptr = _element_pointer(context, builder, sig.args[0], args[0], args[1])
        return context.unpack_value(builder, sig.args[0].dtype, ptr)
    return arr.dtype(arr, index), codegen


@intrinsic
def store(typingctx, arr, index, value):
    """Writes ``value``, cast to ``arr``'s dtype, to element ``index`` of its flat data."""
    if not (isinstance(arr, types.Array) and arr.layout == "C" and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        arrty = sig.args[0]
        ptr = _element_pointer(context, builder, arrty, args[0], args[1])
        context.pack_value(builder, arrty.dtype, context.cast(builder, args[2], sig.args[2], arrty.dtype), ptr)
        return context.get_dummy_value()
    return types.void(arr, index, value), codegen
