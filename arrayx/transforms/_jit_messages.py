"""The retrace warning's and ``Compiled``'s words for what changed between two jit cache keys
(``jitting.py``: a key is ``(statics, static keywords, tree, per-leaf signatures, executor, executor of
new arrays, donation, strict mode)``)."""
from __future__ import annotations

__all__ = ["what_changed", "describe_change"]


def what_changed(prev, new, names, param_name) -> tuple[str, str]:
    """(what differs between two cache keys, how to stop it) for the retrace warning."""
    if prev[0] != new[0]:
        a, b = dict((i, v) for i, v, _ in prev[0]), dict((i, v) for i, v, _ in new[0])
        i = next((i for i in sorted(set(a) | set(b)) if a.get(i) != b.get(i)), None)
        who = param_name(i) if i is not None else "a static argument"
        return (f"the static {who} keeps changing (last {a.get(i)!r} -> {b.get(i)!r})",
                "Each new static value stages the function again: pass a value that changes as an array "
                "(or a Python scalar: a weakly typed 0-d input) instead of marking it static")
    if prev[1] != new[1]:
        a, b = dict((k, v) for k, v, _ in prev[1]), dict((k, v) for k, v, _ in new[1])
        k = next((k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)), None)
        return (f"the static argument {k!r} keeps changing (last {a.get(k)!r} -> {b.get(k)!r})",
                "Each new static value stages the function again: pass a value that changes as an array "
                "(drop it from static_argnames)")
    if prev[2] != new[2]:
        return ("the structure of the arguments keeps changing (another pytree of inputs)",
                "Pass the same containers (same keys, same lengths) on every call")
    for i, (a, b) in enumerate(zip(prev[3], new[3])):
        if a != b:
            who = names[i] if i < len(names) else f"argument leaf {i}"
            if len(a) == 1 or len(b) == 1:
                return (f"{who} keeps changing type ({_sig_str(a)} -> {_sig_str(b)})",
                        "Pass it as an array of one dtype (arrayx.asarray(v, dtype=...))")
            if a[0] != b[0]:
                return (f"the shape of {who} keeps changing ({_sig_str(a)} -> {_sig_str(b)})",
                        "Each new shape stages the function again: pad or bucket it to a few fixed shapes, "
                        "or mark a shape-defining Python value static")
            return (f"the dtype of {who} keeps changing ({_sig_str(a)} -> {_sig_str(b)})",
                    "Convert it to one dtype before the call (x.astype(...))")
    if prev[4] is not new[4] or prev[5] is not new[5]:
        return ("the executor keeps changing", "Keep the arguments (and use_executor) on one executor")
    return ("the donated arguments keep changing", "Donate the same arguments on every call")


def describe_change(prev, new) -> str:
    return what_changed(prev, new, [], lambda p: f"argument {p!r}")[0]


def _sig_str(s) -> str:
    if len(s) == 1:
        return f"Python {s[0].__name__}"
    return f"{s[1]}{list(s[0])}"
