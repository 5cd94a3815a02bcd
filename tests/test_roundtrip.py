"""An entry's values are checked when written: a value whose restored copy would digest
differently (a library's lossy pickling) is not cached, with a message naming it; values
whose round trip is exact by construction are not loaded back."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest

from resumable_cells.engine.keep import value_check
from resumable_cells.errors import Unstorable
from resumable_cells.hashing import hex_digest
from resumable_cells.storage.store import Store


class Lossy:
    """Pickles its cache but forgets it when rebuilt, as some library classes rebuild
    derived state differently from what they stored."""

    def __init__(self, data, cache=None):
        self.data, self.cache = data, {}

    def __reduce__(self):
        return Lossy, (self.data, self.cache)


def _lossy():
    v = Lossy([1, 2])
    v.cache["fit"] = 3
    return v


def test_a_value_whose_copy_differs_is_refused_with_its_name(tmp_path):
    store = Store(tmp_path / "s")
    v = _lossy()
    with pytest.raises(Unstorable) as err:
        store.put_value(hex_digest(v), v, "model", value_check.checker(hex_digest(v), {}, "model"))
    assert err.value.name == "model"
    assert "does not survive pickling" in err.value.why
    assert store.used_bytes() == 0  # nothing written
    faithful = Lossy([1, 2])
    d = hex_digest(faithful)
    ref = store.put_value(d, faithful, "model", value_check.checker(d, {}, "model"))
    assert hex_digest(store.get_value(ref)) == d


class Plain:
    def __init__(self, a, b):
        self.a, self.b = a, b


def test_exact_values_are_not_loaded_back():
    frame = pd.DataFrame({"a": np.arange(5.0), "b": np.arange(5)})
    records = [Plain(1, [2, "x"]), Plain(2, None)]
    strings = pd.DataFrame({"s": ["x", None]}, dtype=object)  # atoms: pickled as they are
    for v in (1, "s", [1, 2.0, None], {"a": [1, 2]}, np.arange(10), frame, frame["a"], records):
        assert value_check.exact(v), v
    assert value_check.exact(strings) and value_check.exact(strings.astype("str"))
    objects = pd.DataFrame({"s": [Plain(1, 2), "y"]})
    for v in (
        Lossy(1),
        np.array([object()]),
        objects,
        [[1, [2]]],
        {(1, 2): 3},
        [Plain(Plain(1, 2), 3)],
    ):
        assert not value_check.exact(v), v


class Normalising:
    def __init__(self, arr):
        self.arr = arr

    def __setstate__(self, state):
        state["arr"] *= 2  # a loader that writes into what it is given
        self.__dict__.update(state)


def test_the_check_never_writes_into_the_live_value():
    v = Normalising(np.arange(100_000, dtype=float))
    from resumable_cells.storage import serialize

    main, buffers = serialize.dumps(v)
    with pytest.raises(Unstorable):
        value_check.checker(hex_digest(v), {}, "v")(v, main, buffers)
    assert v.arr[1] == 1.0


def _served(reply) -> bool:
    return any("served from cache" in s for s in reply.status_lines())


def test_a_lossy_value_is_not_cached_in_a_kernel(kernel):
    kernel.ok(
        "class Lossy:\n    def __init__(self, data, cache=None):\n        self.data, self.cache = data, {}\n"
        "    def __reduce__(self):\n        return Lossy, (self.data, self.cache)"
    )
    cell = "%%step fit\nmodel = Lossy([1, 2])\nmodel.cache['fit'] = 3"
    r = kernel.ok(cell)
    assert "not cached: model cannot be stored" in r.stderr
    assert "does not survive pickling" in r.stderr
    assert not _served(kernel.ok(cell))


@pytest.mark.skipif(importlib.util.find_spec("astropy") is None, reason="needs astropy")
def test_an_astropy_wcs_with_sip_and_cd_is_not_served_changed(kernel):
    kernel.ok(
        "%%step wcs\nimport numpy as np\nfrom astropy.wcs import WCS, Sip\n"
        "w = WCS(naxis=2)\nw.wcs.crpix = [100, 100]\nw.wcs.crval = [10, 20]\n"
        "w.wcs.ctype = ['RA---TAN-SIP', 'DEC--TAN-SIP']\n"
        "a = np.zeros((3, 3)); a[2, 0] = 1e-5\nb = np.zeros((3, 3)); b[0, 2] = 2e-5\n"
        "w.sip = Sip(a, b, None, None, w.wcs.crpix)\nw.wcs.cd = [[-0.001, 1e-4], [1e-4, 0.001]]"
    )
    live = kernel.value("w.all_pix2world([[10.0, 10.0]], 0).tolist()")
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    r = kernel.ok(
        "%%step wcs\nimport numpy as np\nfrom astropy.wcs import WCS, Sip\n"
        "w = WCS(naxis=2)\nw.wcs.crpix = [100, 100]\nw.wcs.crval = [10, 20]\n"
        "w.wcs.ctype = ['RA---TAN-SIP', 'DEC--TAN-SIP']\n"
        "a = np.zeros((3, 3)); a[2, 0] = 1e-5\nb = np.zeros((3, 3)); b[0, 2] = 2e-5\n"
        "w.sip = Sip(a, b, None, None, w.wcs.crpix)\nw.wcs.cd = [[-0.001, 1e-4], [1e-4, 0.001]]"
    )
    assert not _served(r)
    assert "not cached: w cannot be stored" in r.stderr
    assert kernel.value("w.all_pix2world([[10.0, 10.0]], 0).tolist()") == live


def test_builtin_iterators_are_the_items_they_have_left(tmp_path):
    # `z = zip(L1, L2); print(*z)` (whirlwind 10): an exhausted iterator reduces to
    # iter(()) and comes back from a pickle at position 0: the same, empty, iterator.
    store = Store(tmp_path / "s")
    exhausted = zip((1, 2, 3), ("a", "b", "c"))
    list(exhausted)
    halfway = iter([1, 2, 3])
    next(halfway)
    for name, v in (("z", exhausted), ("it", halfway), ("r", iter(range(5)))):
        d = hex_digest(v)
        store.put_value(d, v, name, value_check.checker(d, {}, name))
    assert hex_digest(halfway) == hex_digest(iter([2, 3]))
    assert hex_digest(halfway) != hex_digest(iter([1, 2, 3]))


def test_deciding_whether_a_value_is_exact_does_not_change_it():
    # Reading a partial's __dict__ makes one, and changes what it pickles as: the
    # restored copy then digested differently from the live value (a miss after restart).
    import functools

    part = functools.partial(max, 3)
    d = hex_digest(part)
    assert not value_check.exact(part)
    assert hex_digest(part) == d
