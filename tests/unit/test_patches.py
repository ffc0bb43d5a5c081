"""The patch layer (streamlab/patches.py): the only place that changes a third-party class, and it can undo it.

No Spark session: PySpark's classes are imported, never started.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from streamlab import patches

ROOT = Path(__file__).resolve().parents[2]
OURS = {"streamlab", "grader", "tests", "__future__"}
# What each patch's builder needs to run outside a workshop (the workshop's patches take its options).
GIVEN = {"workshop-kafka-defaults": {"options": {"kafka.security.protocol": "SASL_PLAINTEXT"}, "prefix": "ada-"},
         "workshop-client-defaults": {"config": {"security_protocol": "SASL_PLAINTEXT"}}}


def _third_party_classes(tree: ast.AST) -> set[str]:
    """Names a module binds to a class (a capitalised name) imported from a package that is not ours nor stdlib."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            root = node.module.split(".")[0]
            if root not in OURS and root not in sys.stdlib_module_names:
                names |= {a.asname or a.name for a in node.names if a.name[:1].isupper()}
    return names


def _base(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def class_patches(source: str) -> list[str]:
    """Every assignment to an attribute of a third-party class in `source` (`Cls.attr = …`, `setattr(Cls, …)`, the
    same through a loop variable over such classes, or `pkg.mod.Cls.attr = …`), as 'line: text'."""
    tree = ast.parse(source)
    classes = _third_party_classes(tree)
    modules = {(a.asname or a.name).split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
               for a in node.names if a.name.split(".")[0] not in OURS | set(sys.stdlib_module_names)}
    for node in ast.walk(tree):  # a loop over such classes makes its variable one of them
        if isinstance(node, (ast.For, ast.comprehension)) and any(
                isinstance(n, ast.Name) and n.id in classes for n in ast.walk(node.iter)):
            classes |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}

    def is_class(owner: ast.AST) -> bool:
        if isinstance(owner, ast.Name):
            return owner.id in classes
        base = _base(owner)
        return (isinstance(owner, ast.Attribute) and owner.attr[:1].isupper() and isinstance(base, ast.Name)
                and base.id in modules)

    found = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
            if node.args and is_class(node.args[0]):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Attribute) and isinstance(t.ctx, ast.Store) and is_class(t.value):
                    found.append(f"{node.lineno}: {ast.unparse(t)} = …")
    return sorted(found, key=lambda hit: int(hit.split(":")[0]))


def test_the_scan_finds_each_shape_of_class_patch():
    source = ("from pyspark.sql.readwriter import DataFrameWriter, DataFrameReader\nimport kafka\n"
              "DataFrameWriter.save = None\n"
              "for cls in (DataFrameReader, DataFrameWriter):\n    setattr(cls, 'load', None)\n    cls.format = None\n"
              "kafka.KafkaProducer.DEFAULT_CONFIG = {}\n"
              "self_made = DataFrameWriter(None)\nself_made._mine = 1\n")  # an instance attribute is not a patch
    assert [line.split(":")[0] for line in class_patches(source)] == ["3", "5", "6", "7"], class_patches(source)


def test_no_module_but_the_patch_layer_changes_a_third_party_class():
    found = {}
    for folder in ("streamlab", "grader"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "streamlab" / "patches.py":
                continue
            hits = class_patches(path.read_text())
            if hits:
                found[str(path.relative_to(ROOT))] = hits
    assert not found, f"patch third-party classes in streamlab/patches.py (one row of PATCHES), not here: {found}"


def test_every_patch_is_built_by_a_function_that_exists():
    import importlib

    for patch in patches.PATCHES.values():
        module, function = patch.build.split(":")
        assert callable(getattr(importlib.import_module(module), function, None)), f"{patch.name}: {patch.build}"


@pytest.fixture
def clean():
    """Every patch off for the test; what other tests of this process had installed is put back after."""
    before = [(name, given) for name, given, _ in patches._installed]
    patches.uninstall()
    yield {(m, c, a): patches._class(m, c).__dict__.get(a)
           for p in patches.PATCHES.values() for m, c, attrs in p.targets for a in attrs}
    patches.uninstall()
    for name, given in before:
        patches.install(name, **given)


def test_every_patched_attribute_exists_in_the_installed_packages(clean):
    missing = [f"{c}.{a}" for (m, c, a), original in clean.items() if original is None]
    assert not missing, f"the patches target attributes these PySpark/kafka-python versions lack: {missing}"


def test_install_changes_each_listed_attribute_and_uninstall_restores_every_original(clean):
    for name in patches.PATCHES:
        assert patches.install(name, **GIVEN.get(name, {}))
        assert not patches.install(name, **GIVEN.get(name, {})), f"{name} installed twice"
    assert patches.installed() == list(patches.PATCHES)
    unchanged = [k for k, original in clean.items() if patches._class(k[0], k[1]).__dict__.get(k[2]) is original]
    assert not unchanged, f"listed but not replaced: {unchanged}"
    patches.uninstall()
    assert patches.installed() == []
    changed = [k for k, original in clean.items() if patches._class(k[0], k[1]).__dict__.get(k[2]) is not original]
    assert not changed, f"not restored by uninstall(): {changed}"


def test_uninstalling_one_patch_keeps_the_ones_stacked_on_it(clean):
    from pyspark.sql.readwriter import DataFrameWriter

    from streamlab import offline

    original = clean[("pyspark.sql.readwriter", "DataFrameWriter", "format")]
    patches.install("offline-save-modes")
    patches.install("offline-kafka-format")  # wraps the save-mode hook's format
    assert offline.serves("kafka")
    patches.uninstall("offline-save-modes")
    assert patches.installed() == ["offline-kafka-format"] and offline.serves("kafka")
    assert DataFrameWriter.format.__defaults__ == (original,), "the routing should now wrap Spark's own format"
    assert DataFrameWriter.save is clean[("pyspark.sql.readwriter", "DataFrameWriter", "save")]
    with pytest.raises(KeyError, match="no such patch: nope"):
        patches.uninstall("nope")


def test_the_old_entry_points_install_their_patches(clean, monkeypatch, tmp_path):
    """What the lab calls (setup's watch, a session's engine, a workshop's kernel) installs through the layer."""
    from types import SimpleNamespace

    from streamlab import offline
    from streamlab.lab import access, lifecycle

    options = tmp_path / "kafka.properties"
    options.write_text("kafka.security.protocol=SASL_PLAINTEXT\nkafka.sasl.mechanism=SCRAM-SHA-512\n")
    monkeypatch.setenv("STREAMLAB_KAFKA_OPTIONS", str(options))
    monkeypatch.setenv("STREAMLAB_TOPIC_PREFIX", "ada-")
    access.install_spark()
    access.install_clients()
    lifecycle._guard_queries()
    session = SimpleNamespace(dataSource=SimpleNamespace(register=lambda source: None),
                              conf=SimpleNamespace(set=lambda key, value: None))
    offline.install(session)
    assert sorted(patches.installed()) == sorted(patches.PATCHES)
    from kafka import KafkaProducer

    assert KafkaProducer.DEFAULT_CONFIG["security_protocol"] == "SASL_PLAINTEXT"
