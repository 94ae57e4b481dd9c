"""``import ldpsim`` stays cheap: what only some runs need is imported where they need it.

No timings here (the machine's load decides them): the test checks what a
plain ``import ldpsim`` leaves in ``sys.modules``, in a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys

#: Packages a plain ``import ldpsim`` must not load: scipy's submodules cost about 0.6 s together (stats alone
#: 0.3-0.5 s), matplotlib, pandas and dp_accounting only draw figures, build DataFrames or account privacy;
#: joblib (0.05 s) and tqdm are the driver's, loaded when a run starts; the studies (with the models, mechanisms
#: and kernels they import, 0.1 s) load with a config.
NOT_AT_IMPORT = ("scipy.stats", "scipy.special", "scipy.optimize", "scipy.integrate", "scipy.linalg", "matplotlib",
                 "pandas", "dp_accounting", "joblib", "tqdm", "ldpsim.studies", "ldpsim.models")


def _modules_after(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(proc.stdout.splitlines()[-1]))


def test_import_ldpsim_leaves_out_what_only_a_run_needs():
    loaded = _modules_after("import ldpsim")
    assert "numba" in loaded  # ldpsim.engine.dialect.jit imports it first, with its cache folder set
    assert [name for name in NOT_AT_IMPORT if name in loaded] == []


def test_the_public_api_still_imports_from_the_package():
    loaded = _modules_after("from ldpsim import (ConfigError, ConfigWarning, MissingExtra, Result, __version__, "
                            "load_config, open_result, run)")
    assert [name for name in NOT_AT_IMPORT if name in loaded] == []


def test_the_layers_are_still_attributes_of_the_package():
    loaded = _modules_after("import ldpsim\nassert 'coverage' in ldpsim.studies.STUDIES\nldpsim.models.build_model")
    assert {"ldpsim.studies", "ldpsim.models"} <= loaded


def test_the_check_sees_a_module_loaded():
    assert "scipy.stats" in _modules_after("import ldpsim\nfrom scipy import stats")


def test_each_public_module_imports_first_in_a_fresh_interpreter():
    # a user's model file starts with `from ldpsim.extend import ...`: no module of the package may need
    # another to be imported before it (models/huber.py importing ldpsim.extend made that one a cycle)
    for module in ("ldpsim.extend", "ldpsim.models", "ldpsim.privacy.mechanisms", "ldpsim.fit", "ldpsim.api",
                   "ldpsim.cli", "ldpsim.studies"):
        assert module in _modules_after(f"import {module}"), module
