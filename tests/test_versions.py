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


def test_the_headers_read_give_every_installed_distribution_s_name_and_version():
    # `_header` reads METADATA's headers alone, where importlib parses the whole file
    for dist in metadata.distributions():
        assert versions._header(dist, "Name") == dist.metadata["Name"]
        assert versions._header(dist, "Version") == dist.version


def _fake_dist(root, name, version, record, top_level=None, body=""):
    info = root / f"{name}-{version}.dist-info"
    info.mkdir()
    headers = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    (info / "METADATA").write_text(headers + "\n" + body)
    (info / "RECORD").write_text(record)
    if top_level is not None:
        (info / "top_level.txt").write_text(top_level)


def test_a_module_its_distribution_is_not_named_after_has_the_distribution_s_version(
    tmp_path, monkeypatch
):
    # as `sklearn` (scikit-learn) or `mpl_toolkits` (matplotlib): found through the
    # files each distribution installs, its description's lines never read as headers
    _fake_dist(
        tmp_path,
        "fake-dist-for-a-test",
        "3.2.1",
        'fakemod_for_test/__init__.py,sha256=x,1\n"fakemod_for_test/a,b.py",sha256=y,2\n'
        "fake_top_file_for_test.py,sha256=z,3\n"
        "fake_dist_for_a_test-3.2.1.dist-info/METADATA,,\n",
        body="Version: 9.9.9\nName: other\n",
    )
    _fake_dist(tmp_path, "declared-dist-for-a-test", "0.5", "", top_level="declared_mod_for_test\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    versions._owners.cache_clear()
    versions.module_version.cache_clear()
    try:
        assert versions.module_version("fakemod_for_test") == "3.2.1"
        assert versions.module_version("fake_top_file_for_test") == "3.2.1"
        assert versions.module_version("declared_mod_for_test") == "0.5"
        assert versions.module_version("nothing_installs_this_for_test") is None
    finally:
        versions._owners.cache_clear()
        versions.module_version.cache_clear()
