"""Values between the learner's kernel and the grader: plain data as tagged JSON, everything else by reference.

The kernel side (AGENT, injected into the learner's kernel) is untrusted: it may be replaced by learner code. So
the grader only ever *parses* what comes back (json + the tags below, never pickle or eval), and a tampered agent
can do no more than report wrong values for the learner's own notebook.

Tags: {"$f": "inf"} floats json cannot hold, {"$l": [...]} list, {"$t": [...]} tuple, {"$s": [...]} set,
{"$d": [[k, v], ...]} dict, {"$fn": path} a learner function, {"$o": path, "type": name} another object,
{"$imp": [module, name]} an object importable from a trusted module, {"$spark": 1} the Spark session,
{"$err": [type name, message]} an exception.
"""
from __future__ import annotations

import datetime
import decimal
import json
import math
import uuid

AGENT_NAME = "__streamlab_agent__"

# Runs inside the learner's kernel. Kept dependency-free so it works whatever the notebook imported.
AGENT = r'''
class __StreamlabAgent:
    import json as _json, math as _math, sys as _sys, types as _types
    LIMIT = 20_000_000

    def __init__(self, ns):
        self.ns, self.results = ns, []

    def resolve(self, path):
        if path[0] == "__streamlab_agent__":
            obj = self
        elif path[0] in self.ns:
            obj = self.ns[path[0]]
        elif path[0] == "streamlab":
            import streamlab as obj
        else:
            raise NameError(f"name {path[0]!r} is not defined")
        for step in path[1:]:
            if isinstance(step, list):
                obj = obj[step[1]]
            elif isinstance(obj, self._types.ModuleType) and not hasattr(obj, step):
                import importlib
                obj = importlib.import_module(f"{obj.__name__}.{step}")
            else:
                obj = getattr(obj, step)
        return obj

    def trusted_origin(self, obj):
        mod = getattr(obj, "__module__", None) or ""
        name = getattr(obj, "__qualname__", None)
        root = mod.split(".")[0]
        if name and "<" not in name and mod != "__main__" and (root in self._sys.stdlib_module_names
                                                              or root in ("streamlab", "pyspark", "pandas")):
            return [mod, name]
        return None

    def enc(self, x, path, depth=0):
        if depth > 40:
            raise ValueError("the value is nested too deeply to send")
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, int):
            return int(x)
        if isinstance(x, float):
            return x if self._math.isfinite(x) else {"$f": repr(x)}
        tname = type(x).__module__ + "." + type(x).__qualname__
        if tname == "pyspark.sql.session.SparkSession":
            return {"$spark": 1}
        if isinstance(x, self._types.ModuleType):
            return {"$imp": [x.__name__, None]}
        if hasattr(x, "item") and type(x).__module__ == "numpy" and getattr(x, "shape", None) == ():
            return self.enc(x.item(), path, depth)
        if tname.startswith("pyspark.sql.streaming") and isinstance(getattr(x, "json", None), str):
            return self.enc(self._json.loads(x.json), path, depth)
        if tname == "pyspark.sql.types.Row":
            return self.enc(x.asDict(recursive=True), path, depth)
        if isinstance(x, (list, tuple, set, frozenset)):
            tag = "$l" if isinstance(x, list) else "$t" if isinstance(x, tuple) else "$s"
            return {tag: [self.enc(v, path + [["i", i]], depth + 1) for i, v in enumerate(x)]}
        if isinstance(x, dict):
            return {"$d": [[self.enc(k, path, depth + 1), self.enc(v, path + [["k", k]], depth + 1)]
                           for k, v in x.items()]}
        bound = getattr(x, "__self__", None)
        if callable(x) and bound is not None and not isinstance(bound, self._types.ModuleType):
            return {"$fn": path}  # a method of one of the notebook's objects: call it there
        origin = self.trusted_origin(x) if isinstance(x, type) or callable(x) else None
        if origin:
            return {"$imp": origin}
        if callable(x) and not isinstance(x, type):
            return {"$fn": path}
        return {"$o": path, "type": tname}

    def out(self, fn):
        try:
            text = self._json.dumps(fn())
        except BaseException as exc:
            text = self._json.dumps({"$err": [type(exc).__name__, str(exc)[:500]]})
        if len(text) > self.LIMIT:
            text = self._json.dumps({"$err": ["ValueError", "the value is too large to send to the grader"]})
        return text

    def get(self, path_json):
        path = self._json.loads(path_json)
        return self.out(lambda: self.enc(self.resolve(path), path))

    def dec(self, x):
        if isinstance(x, list):
            return [self.dec(v) for v in x]
        if not isinstance(x, dict):
            return x
        if "$f" in x:
            return float(x["$f"])
        if "$l" in x:
            return [self.dec(v) for v in x["$l"]]
        if "$t" in x:
            return tuple(self.dec(v) for v in x["$t"])
        if "$s" in x:
            return {self.dec(v) for v in x["$s"]}
        if "$d" in x:
            return {self.dec(k): self.dec(v) for k, v in x["$d"]}
        if "$ref" in x:
            return self.resolve(x["$ref"])
        raise ValueError("unknown value tag")

    def call(self, path_json, args_json):
        path, (args, kwargs) = self._json.loads(path_json), self._json.loads(args_json)

        def run():
            value = self.resolve(path)(*self.dec(args), **self.dec(kwargs))
            self.results.append(value)  # kept, so an object it returns can be used by reference
            return self.enc(value, ["__streamlab_agent__", "results", ["i", len(self.results) - 1]])
        return self.out(run)


__streamlab_agent__ = __StreamlabAgent(globals())
'''


class WireError(ValueError):
    """The kernel's answer could not be read (not valid tagged JSON)."""


def encode(value, ref=None):
    """Plain data (and references to the kernel's own objects) as tagged JSON for the kernel side."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$f": repr(value)}
    if ref is not None and ref(value) is not None:
        return {"$ref": ref(value)}
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
        return encode(value.item(), ref)
    if isinstance(value, (uuid.UUID, datetime.date, datetime.time, decimal.Decimal)):
        return str(value)  # as Spark's progress events give them in JSON
    if isinstance(value, list):
        return {"$l": [encode(v, ref) for v in value]}
    if isinstance(value, tuple):
        return {"$t": [encode(v, ref) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"$s": [encode(v, ref) for v in value]}
    if isinstance(value, dict):
        return {"$d": [[encode(k, ref), encode(v, ref)] for k, v in value.items()]}
    raise TypeError(f"cannot send a {type(value).__name__} to the learner's kernel (only plain data)")


def decode(text: str, make):
    """Parse the kernel's tagged JSON; `make(tag, payload)` builds proxies for $fn, $o, $imp, $spark and $err."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise WireError(f"unreadable answer from the kernel ({exc})") from None
    return _dec(data, make, 0)


def _dec(x, make, depth):
    if depth > 60:
        raise WireError("value nested too deeply")
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, list):
        return [_dec(v, make, depth + 1) for v in x]
    if not isinstance(x, dict) or len(x) == 0:
        raise WireError("unexpected value shape")
    if "$f" in x:
        if x["$f"] not in ("inf", "-inf", "nan"):
            raise WireError("bad float")
        return float(x["$f"])
    if "$l" in x:
        return [_dec(v, make, depth + 1) for v in _items(x["$l"])]
    if "$t" in x:
        return tuple(_dec(v, make, depth + 1) for v in _items(x["$t"]))
    if "$s" in x:
        try:
            return {_dec(v, make, depth + 1) for v in _items(x["$s"])}
        except TypeError:
            raise WireError("unhashable set member") from None
    if "$d" in x:
        out = {}
        for pair in _items(x["$d"]):
            if not isinstance(pair, list) or len(pair) != 2:
                raise WireError("bad dict item")
            try:
                out[_dec(pair[0], make, depth + 1)] = _dec(pair[1], make, depth + 1)
            except TypeError:
                raise WireError("unhashable dict key") from None
        return out
    for tag in ("$fn", "$o", "$imp", "$spark", "$err"):
        if tag in x:
            return make(tag, x)
    raise WireError("unknown value tag")


def _items(x):
    if not isinstance(x, list):
        raise WireError("expected a list")
    return x
