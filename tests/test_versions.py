"""Package versions in a step's key (`hashing/versions.py`)."""

from __future__ import annotations

import sys
import types
from importlib import metadata

from resumable_cells.hashing import versions


def test_a_module_made_at_run_time_has_no_version_and_reads_no_package_list(monkeypatch):
    # Cython's shared `_cython_3_2_4` module, which scipy's functions name as theirs, is
    # made when scipy loads: no distribution installs it, so none is asked.
    made = types.ModuleType("_made_at_run_time_for_a_test")
    monkeypatch.setitem(sys.modules, made.__name__, made)
    versions._owners.cache_clear()
    versions.module_version.cache_clear()
    assert versions.module_version(made.__name__) is None
    assert versions._owners.cache_info().misses == 0


def test_a_module_loaded_under_another_name_too_has_its_package_s_version(monkeypatch):
    # pandas's Cython functions name `_cyutility` as their module: sys.modules holds
    # `pandas._libs._cyutility` under that name too. Its version is pandas's, found
    # without reading every installed package's file list.
    import xxhash

    alias = types.ModuleType("xxhash._shared_for_a_test")
    alias.__file__ = xxhash.__file__
    monkeypatch.setitem(sys.modules, "_shared_for_a_test", alias)
    versions._owners.cache_clear()
    versions.module_version.cache_clear()
    assert versions.module_version("_shared_for_a_test") == versions.module_version("xxhash")
    assert versions.module_version("xxhash") == metadata.version("xxhash")
    assert versions._owners.cache_info().misses == 0


def test_a_module_without_a_version_attribute_gets_its_distribution_s():
    import typing_extensions

    assert not hasattr(typing_extensions, "__version__")
    versions.module_version.cache_clear()
    assert versions.module_version("typing_extensions") == metadata.version("typing_extensions")


def test_the_standard_library_has_no_version_of_its_own():
    assert versions.module_version("json") is None
