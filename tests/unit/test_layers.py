"""The layers of streamlab/ and grader/, read from their import graph (ast only: nothing is imported or run).

An import at a module's top level and one inside a function are kept apart: the first runs when the module is
imported, the second only when that function is called (the lab defers heavy or circular imports that way), but
both are a dependency the reader of the code has to follow. A circle is a strongly connected set of modules.

`python tests/unit/test_layers.py [ROOT]` prints the circles of both graphs and each module's size.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("streamlab", "grader", "bench", "workshop")


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the packages, by dotted name (a package by its own name, for its __init__.py)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _in_function(node: ast.AST, parents: dict) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return True
    return False


def imports(root: Path = ROOT) -> dict[str, dict[str, set[str]]]:
    """{module: {"top": modules it imports at import time, "local": those it imports inside a function}}, ours only."""
    known = modules(root)
    graph = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = {"top": set(), "local": set()}
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
            for target in targets:
                while target and target not in known:  # `import streamlab.lab.broker as b`, `from a.b import name`
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges["local" if _in_function(node, parents) else "top"].add(target)
        graph[name] = edges
    return graph


def circles(graph: dict[str, dict[str, set[str]]], kinds=("top", "local")) -> list[list[str]]:
    """The import circles (strongly connected sets of two or more modules) over the edges of `kinds`, sorted."""
    edges = {m: set().union(*(graph[m][k] for k in kinds)) for m in graph}
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's algorithm
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def under(graph, prefix: str, kinds=("top", "local")) -> dict[str, set[str]]:
    """What each module under `prefix` imports, over the edges of `kinds`."""
    return {m: set().union(*(graph[m][k] for k in kinds)) for m in graph if m == prefix or m.startswith(prefix + ".")}


def reaching(graph, source: str, target: str, kinds=("top", "local")) -> list[str]:
    """'a -> b' for every import from a module under `source` to one under `target`."""
    return sorted(f"{m} -> {t}" for m, targets in under(graph, source, kinds).items()
                  for t in targets if t == target or t.startswith(target + "."))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def private_uses(root: Path = ROOT) -> list[tuple[str, int, str]]:
    """(file, line, use) for every private name of one of our modules used in another: `from m import _x`, and
    `m._x` (read, written, or named in getattr/setattr/hasattr/delattr) where `m` is a name its scope bound by
    importing our module m. The private names of other objects (PySpark's `spark._jvm`, an instance's) are not
    counted, nor `from m import x as _x` (a private alias of a public name), nor a module's use of its own."""
    known = modules(root)
    found = []
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        where = str(path.relative_to(root))

        def scope_of(node):
            while node in parents:
                node = parents[node]
                if isinstance(node, _SCOPES):
                    return node
            return tree

        imported, other = {}, set()  # (scope, local name) -> our module it is bound to; names bound otherwise
        for node in ast.walk(tree):
            scope = scope_of(node)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.name if alias.asname else alias.name.split(".")[0]
                    local = alias.asname or bound
                    if bound in known:
                        imported[(scope, local)] = bound
                    else:
                        other.add((scope, local))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    local = alias.asname or alias.name
                    if f"{base}.{alias.name}" in known:
                        imported[(scope, local)] = f"{base}.{alias.name}"
                    else:
                        other.add((scope, local))
                        if base in known and base != name and _private(alias.name):
                            found.append((where, node.lineno, f"from {base} import {alias.name}"))
            elif isinstance(node, ast.arg):
                other.add((scope, node.arg))
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                other.add((scope, node.id))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                other.add((scope, node.name))

        def module_of(expr):
            """The module of ours `expr` names in its scope (a name bound by an import, or a dotted path), or None."""
            if isinstance(expr, ast.Attribute):
                outer = module_of(expr.value)
                return f"{outer}.{expr.attr}" if outer and f"{outer}.{expr.attr}" in known else None
            if not isinstance(expr, ast.Name):
                return None
            scope = scope_of(expr)
            while True:  # Python's rule: the innermost function scope that binds the name; class bodies are skipped
                if (scope, expr.id) in imported:
                    return imported[(scope, expr.id)]
                if (scope, expr.id) in other or scope is tree:
                    return None
                scope = scope_of(scope)
                while isinstance(scope, ast.ClassDef):
                    scope = scope_of(scope)

        for node in ast.walk(tree):
            target, attr = None, None
            if isinstance(node, ast.Attribute) and _private(node.attr):
                target, attr = module_of(node.value), node.attr
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2
                  and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
                  and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                  and _private(node.args[1].value)):
                target, attr = module_of(node.args[0]), node.args[1].value
            if target and target != name:
                found.append((where, node.lineno, f"{target}.{attr}"))
    return sorted(found)


GRAPH = imports()


def test_the_graph_sees_the_imports_it_should():
    """The walk itself: a top-level, a function-level and a relative import of known modules."""
    assert "streamlab.lab.broker" in GRAPH["streamlab.lab.topics"]["top"]
    assert "streamlab.lab.session" in GRAPH["streamlab.lab.broker"]["local"]
    assert "grader.runner" in GRAPH["grader.grading"]["top"]  # `from .runner import …`
    assert circles({"a": {"top": {"b"}, "local": set()}, "b": {"top": set(), "local": {"a"}},
                    "c": {"top": {"a"}, "local": set()}}) == [["a", "b"]]


def test_no_module_imports_in_a_circle_at_import_time():
    """A circle of top-level imports fails at import, in an order that depends on which module came first."""
    assert circles(GRAPH, ("top",)) == []


def test_the_notebook_runtime_does_not_import_the_grader():
    """The lab, observation, delivery and the offline engine run in every learner's kernel: no grader in them."""
    for package in ("streamlab.lab", "streamlab.observe", "streamlab.delivery", "streamlab.offline",
                    "streamlab.rates", "streamlab.lakehouse"):
        assert not reaching(GRAPH, package, "grader"), reaching(GRAPH, package, "grader")


def test_the_runtime_imports_no_application():
    """streamlab/ is what every learner's kernel imports: `make bench` (bench/) and the workshop hub (workshop/)
    stand outside it, and neither it nor the grader imports them; the runtime does not use the grader."""
    for application in ("bench", "workshop"):
        for package in ("streamlab", "grader"):
            assert not reaching(GRAPH, package, application), reaching(GRAPH, package, application)
    assert not reaching(GRAPH, "streamlab", "grader"), reaching(GRAPH, "streamlab", "grader")


def test_the_offline_engine_imports_only_itself_and_the_base_modules():
    """Spark's connector re-done stands alone (the differential tests judge it against the real one)."""
    outside = [edge for edge in reaching(GRAPH, "streamlab.offline", "streamlab")
               if not edge.split(" -> ")[1].startswith(("streamlab.offline", "streamlab.patches", "streamlab.errors"))]
    assert not outside, outside


def test_the_lab_does_not_import_what_is_built_on_it():
    """observe, demo, delivery, rates, the lakehouse and the workshop use the lab; the lab uses none of them."""
    for upper in ("streamlab.observe", "streamlab.demo", "streamlab.delivery", "streamlab.rates",
                  "workshop", "streamlab.lakehouse"):
        assert not reaching(GRAPH, "streamlab.lab", upper), reaching(GRAPH, "streamlab.lab", upper)


def test_the_runtime_has_no_import_circle():
    """No circle anywhere in streamlab/, through a top-level or a function-level import: the lab's floor (machine,
    kraft, jars) imports nothing above it; the interview pools share streamlab.course.choices, the quiz and the
    learner's numbers share streamlab.course.quiz_record, the offline engine's source and sink share its routing
    and checkpoint modules. A deferred import that closes a circle fails here as a top-level one would."""
    inside = [c for c in circles(GRAPH) if any(m == "streamlab" or m.startswith("streamlab.") for m in c)]
    assert inside == [], inside


def test_the_grader_has_no_import_circle():
    """audit, grading, runner and worker each have one place in the grading pipeline."""
    inside = [c for c in circles(GRAPH) if any(m.startswith("grader") for m in c)]
    assert inside == [], inside


def test_the_circle_test_sees_a_deferred_import_inside_a_package(tmp_path):
    """A function-level import back to a package's __init__ (the offline engine's old circle) is a circle."""
    package = tmp_path / "streamlab" / "offline"
    package.mkdir(parents=True)
    (tmp_path / "streamlab" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("def register():\n    from streamlab.offline.source import S\n")
    (package / "source.py").write_text("from streamlab.offline import register\nS = 1\n")
    assert circles(imports(tmp_path)) == [["streamlab.offline", "streamlab.offline.source"]]


# Private names still used across modules in files other work is changing now (other work in flight; to empty):
# each needs a public name where its concept lives, then its entry here goes.
LEFT: set = set()  # uses still to change: none


def test_no_module_uses_another_modules_private_name():
    """A private name is its module's to change: another module that needs it gets a public name (with a one-line
    docstring where its concept lives) or the public original it aliases. LEFT lists the uses still to change."""
    uses = private_uses()
    new = [f"{file}:{line} {use}" for file, line, use in uses if (file, use) not in LEFT]
    assert not new, "use a public name (give it one where it lives):\n" + "\n".join(new)
    gone = LEFT - {(file, use) for file, _, use in uses}
    assert not gone, f"no longer used: remove from LEFT in tests/unit/test_layers.py: {sorted(gone)}"


def test_the_private_name_walk_sees_what_it_should(tmp_path):
    """The walk itself: what it flags, and the private names it leaves alone."""
    package = tmp_path / "streamlab"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("_x = 1\ny = 2\n\ndef _f():\n    return _x\n")
    (package / "b.py").write_text(
        "import streamlab.a\n"
        "from streamlab import a\n"
        "from streamlab.a import _x\n"              # flagged: a private name imported
        "from .a import _f as f\n"                  # flagged: a relative import of one
        "from streamlab.a import y as _y\n"         # a private alias of a public name: fine
        "import streamlab.a as alias\n"
        "print(a._x, streamlab.a._f, _y)\n"         # flagged twice
        "alias._x = 3\n"                            # flagged: a write
        "setattr(a, '_x', 4)\n"                     # flagged: named in setattr
        "def g(a, spark):\n"
        "    return a._x, spark._jvm, alias.__name__\n"  # a parameter `a`, a third-party object, a dunder: fine
        "class C:\n"
        "    a = None\n"
        "    def m(self):\n"
        "        return a._f\n")                    # flagged: a class attribute does not hide the module in a method
    assert [(line, use) for _, line, use in private_uses(tmp_path)] == [
        (3, "from streamlab.a import _x"), (4, "from streamlab.a import _f"), (7, "streamlab.a._f"),
        (7, "streamlab.a._x"), (8, "streamlab.a._x"), (9, "streamlab.a._x"), (15, "streamlab.a._f")]


def report(root: Path = ROOT) -> str:
    graph = GRAPH if root == ROOT else imports(root)
    lines = [f"circles, top-level imports: {circles(graph, ('top',)) or 'none'}", "circles, all imports:"]
    lines += [f"  {len(c)}: {' '.join(c)}" for c in circles(graph)] or ["  none"]
    lines.append("lines per module:")
    lines += [f"  {len(path.read_text().splitlines()):5d} {name}" for name, path in modules(root).items()]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT))
