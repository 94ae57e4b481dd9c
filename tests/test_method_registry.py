"""The registry of methods (ldpsim/inference/methods/): each method declared once, every list a query of it.

The lists it gives must be those the code has always used, element by element
and in order (the coverage study reorders a config's methods into its
choices' order, so the order is part of every committed chunk); the stream
codes are seeds' spawn keys and must never change; a method declared in a
new module joins every list without a line elsewhere.
"""

from __future__ import annotations

import importlib
import sys

import pytest

from ldpsim.inference import intervals
from ldpsim.inference import methods as registry
from ldpsim.inference.methods import REGISTRY, Method, names
from ldpsim.recursion.zoo import STREAM_CODES, ZooPaths
from ldpsim.studies import STUDIES
from ldpsim.studies.coverage import zoo
from ldpsim.studies.coverage.study import INFERENCE_KEYS, METHODS_KEY
from ldpsim.studies.coverage.trace import TRACE_METHODS
from ldpsim.studies.dpsgd import calibration
from ldpsim.studies.sagd import kernel as sagd_kernel
from ldpsim.studies.sagd.common import METHODS as SAGD_METHODS


def test_the_lists_are_those_the_code_always_used():
    assert intervals.POINTWISE_METHODS == ("BB", "BBjoint", "BM", "SN", "oracle")
    assert intervals.CS_METHODS == ("AsympCS", "AsympCS_oracle")
    assert intervals.METHODS == intervals.POINTWISE_METHODS + intervals.CS_METHODS
    assert intervals.BLOCK_METHODS == ("BB", "BBjoint") and intervals.BATCH_METHODS == ("BM", "AsympCS")
    assert intervals.DEFAULT_METHODS == ("BB", "BM", "SN", "oracle")
    assert registry.ZOO_METHODS == ("HulC", "HiGrad", "OB", "OB_split", "OBM", "plugin_oracle")
    assert registry.RELEASE_METHODS == ("NPRR_H", "NPRR_EB", "NPRR_H_CI", "NPRR_EB_CI")
    assert METHODS_KEY.choices == intervals.METHODS + registry.RELEASE_METHODS + registry.ZOO_METHODS
    assert [k.name for k in INFERENCE_KEYS] == ["beta", "B", "level", "multiplier"]
    assert TRACE_METHODS == ("BB", "BM", "SN")
    assert calibration.METHODS == ("plugin", "plugin_raw", "RS", "RS_raw", "RS_paper", "oracle", "BB", "BM", "DPGD")
    assert calibration.DEFAULT_METHODS == ("plugin", "plugin_raw", "RS", "RS_raw", "oracle", "BB", "BM")
    assert calibration.PRIVATE_MOMENT_METHODS == ("plugin", "plugin_raw", "RS", "RS_paper", "DPGD")
    assert calibration.PATH_METHODS == ("plugin", "plugin_raw", "RS", "RS_raw", "RS_paper", "BB", "BM")
    assert calibration.RANDOM_SCALING_METHODS == ("RS", "RS_raw", "RS_paper")
    assert zoo.ZOO_KEY_METHODS == {"hulc_delta": ("HulC",), "higrad_splits": ("HiGrad",),
                                   "higrad_threads": ("HiGrad",), "higrad_step_ratio": ("HiGrad",),
                                   "ob_paths": ("OB", "OB_split"), "ob_interval": ("OB", "OB_split"),
                                   "obm_constant": ("OBM",)}


def test_stream_codes_and_kernel_codes_never_change():
    # child `code` of a replication's seed is a zoo method's stream: committed runs were drawn from these
    assert STREAM_CODES == {"HulC": 1, "HiGrad": 2, "OB": 3, "OB_split": 4}
    assert zoo.PATH_METHODS == ("HulC", "HiGrad", "OB", "OB_split")
    assert SAGD_METHODS == {"sagd_lap": 0, "sagd_sparse": 1, "rmsprop": 2, "adam": 3}
    assert (sagd_kernel.LAP, sagd_kernel.SPARSE, sagd_kernel.RMSPROP, sagd_kernel.ADAM) == (0, 1, 2, 3)


def test_every_studys_methods_key_is_the_registrys():
    for study in ("coverage", "dpsgd", "sagd_generalization"):
        key = next(k for k in STUDIES[study].keys if k.name == "methods")
        assert key.choices == names(study), study
        assert tuple(key.default) == names(study, default=True), study


def test_every_method_declares_its_row_state_and_interval():
    for name, m in REGISTRY.items():
        assert m.text.strip() and m.studies, name
        if m.kind in ("interval", "sequence"):
            assert callable(m.interval) and m.state_floats is not None, name
        if m.kind == "zoo":  # its interval from its arrays, its state's size, its pass's cost
            assert callable(m.interval) and m.state_floats and m.pass_cost and m.update and m.twin, name
            # the zoo's kernel record has a part for it (or it keeps state of the main path's in one)
            assert m.stream_code is None or name in STREAM_CODES
    # the zoo's kernel record has exactly the parts of the registry's zoo methods (OB_split: ob_split)
    parts = {f for f in ZooPaths._fields if f not in ("dim", "active")}
    assert parts == {m.lower() for m in registry.ZOO_METHODS} - {"plugin_oracle"} | {"plugin"}


def test_every_method_a_figure_draws_has_its_style():
    assert all(REGISTRY[m].line for m in names("trace"))  # trace's figure1.png: a line each
    assert all(REGISTRY[m].style for m in intervals.METHODS)  # coverage.png: colour and marker


def test_a_key_is_declared_once():
    with pytest.raises(ValueError, match="key 'level' is declared twice"):
        from ldpsim.engine.runs.config import Key

        REGISTRY["__a"] = Method("__a", "a", studies={"coverage": 1}, keys=(Key("level", "float", 0.5),))
        try:
            registry.keys_of(["BB", "__a"])
        finally:
            del REGISTRY["__a"]


def test_a_method_in_a_new_module_joins_every_list(tmp_path, monkeypatch):
    # a family module dropped into the package is imported with the others (no list to edit)
    package = registry.__path__[0]
    name = "zz_test_family"
    path = tmp_path / f"{name}.py"
    path.write_text("from ldpsim.inference.methods.base import Method, register\n"
                    "register(Method('MyCI', 'a test interval', studies={'coverage': 45}, reads=('sn',),"
                    " interval=lambda x: (x.state.theta_bar, x.state.theta_bar)))\n")
    monkeypatch.setattr(registry, "__path__", [package, str(tmp_path)])
    before = dict(REGISTRY)
    try:
        for info in __import__("pkgutil").iter_modules(registry.__path__):
            if info.name == name:
                importlib.import_module(f"{registry.__name__}.{name}")
        assert names() == ("BB", "BBjoint", "BM", "SN", "MyCI", "oracle", *names()[6:])
        assert "MyCI" in names(reads="sn") and "MyCI" not in names("dpsgd")
    finally:
        REGISTRY.clear()
        REGISTRY.update(before)
        sys.modules.pop(f"{registry.__name__}.{name}", None)


def test_declarations_that_cannot_be_are_refused():
    for kwargs, pattern in ((dict(kind="nope"), "kind = 'nope'"), (dict(reads=("path",)), "reads"),
                            (dict(default_in=("dpsgd",)), "a default in a study that does not take it")):
        with pytest.raises(ValueError, match=pattern):
            Method("X", "x", studies={"coverage": 1}, **kwargs)
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(Method("BM", "again", studies={"coverage": 1}))
