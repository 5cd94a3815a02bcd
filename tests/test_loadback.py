"""Classes whose own pickling builds their parts anew (a `__setstate__` that copies,
astropy's Table) and array subclasses with attributes, inside a unit: a hit restores
them part by part, as the live run left them, and what a unit cannot keep one object
is refused when it is written (`engine/keep/unit_check.py`), never served as two."""

from __future__ import annotations

import pytest
from replay import replay

# A box whose `__setstate__` copies its list, as astropy's Table copies its columns.
BOX = """class Box:
    def __init__(self, items):
        self.items = list(items)
    def __getstate__(self):
        return {'items': self.items}
    def __setstate__(self, state):
        self.items = list(state['items'])"""


def test_a_class_whose_setstate_copies_is_restored_part_by_part(kernel):
    # Restored through its `__setstate__`, the box got a copy of its list after the
    # hit, and `keep` (the live list) was no longer `box.items`: a silent difference.
    cells = [
        BOX,
        "%%step make\nbox = Box([1])",
        "keep = box.items",
        "%%step grow\nbox.items.append(2)",
    ]
    live, again = replay(kernel, cells, "(keep is box.items, box.items)")
    assert live == again == "(True, [1, 2])\n"


def test_a_new_value_whose_pickling_copies_a_part_another_name_holds_is_refused(kernel):
    kernel.ok(BOX)
    kernel.ok("%load_ext resumable_cells")
    r = kernel.ok("%%step make\nbox = Box([1])\nfirst = box.items")
    assert "box.items and first are one list, and pickling makes two of them" in r.stderr
    again = kernel.ok("%%step make\nbox = Box([1])\nfirst = box.items")
    assert "served" not in again.status_lines()[0]
    assert kernel.ok("print(first is box.items)").stdout == "True\n"


# A unit whose `__getstate__` drops its cache, as astropy's units drop their hash.
UNIT = """class Unit:
    def __init__(self, parts):
        self.parts = parts
    def key(self):
        if '_key' not in self.__dict__:
            self._key = tuple(self.parts)
        return self._key
    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop('_key', None)
        return state
    def times(self, p):
        return Unit(self.parts + [p])"""


def test_a_changed_input_rebound_whose_state_drops_a_cache_is_served(kernel):
    # The old unit, changed and rebound, was refused: the cache its state leaves out
    # counted as a part pickling puts elsewhere; then, written raw, its copy was read
    # through the new value's (`astropy.units.Unit`, `unit * u.s`).
    cells = [
        UNIT,
        "%%step make\nu1 = Unit(['km'])\nu1.key()",
        "keep = [u1]",
        "%%step more\nu1.used = True\nu1 = u1.times('s')",
    ]
    live, again = replay(
        kernel, cells, "(u1.parts, keep[0].parts, keep[0].used, keep[0] is not u1)"
    )
    assert live == again == "(['km', 's'], ['km'], True, True)\n"


def test_an_array_subclass_inside_a_container_keeps_its_attributes(kernel):
    # The unit pickled the new state of an array it restores in place as numpy does,
    # without its instance dict: after the hit the tag was None.
    cells = [
        "import numpy as np\nclass Tagged(np.ndarray):\n"
        "    def __array_finalize__(self, obj):\n        self.tag = getattr(obj, 'tag', None)\n"
        "t = np.arange(3.0).view(Tagged)\nt.tag = 'a'\nd = {'k': t}",
        "%%step m\nd['k'][0] = 5",
    ]
    live, again = replay(kernel, cells, "(d['k'] is t, t.tag, t.tolist())")
    assert live == again == "(True, 'a', [5.0, 1.0, 2.0])\n"


ASTROPY = pytest.mark.skipif(
    not __import__("importlib.util").util.find_spec("astropy"), reason="astropy not installed"
)
TABLE = "%%step make\nfrom astropy.table import Table\ntab = Table({'a': [1, 2], 'b': ['x', 'y']})"
LINKS = (
    "(list(c), c is tab.columns['a'], c.parent_table is tab, c.info._parent_ref() is c, "
    "tab['b'].parent_table is tab)"
)


@ASTROPY
def test_an_astropy_table_whose_column_changed_is_served_as_it_was(kernel):
    cells = [TABLE, "%%step m\ntab['a'][0] = 5", "c = tab['a']"]
    live, again = replay(kernel, cells, LINKS)
    assert live == again == "([np.int64(5), np.int64(2)], True, True, True, True)\n"


@ASTROPY
def test_an_astropy_column_changed_through_a_name_stays_the_tables(kernel):
    cells = [TABLE, "%%step m\nc = tab['a']\nc[0] = 5"]
    live, again = replay(kernel, cells, LINKS)
    assert live == again == "([np.int64(5), np.int64(2)], True, True, True, True)\n"


@ASTROPY
def test_a_new_table_and_its_column_in_two_names_are_refused(kernel):
    # astropy's Table copies its columns when unpickled: served, `c2` was another column
    # than `t2['a']`.
    kernel.ok("%load_ext resumable_cells")
    cell = "%%step a\nfrom astropy.table import Table\nt2 = Table({'a': [1, 2]})\nc2 = t2['a']"
    r = kernel.ok(cell)
    assert "t2.columns['a'] and c2 are one Column, and pickling makes two of them" in r.stderr
    assert "served" not in kernel.ok(cell).status_lines()[0]
