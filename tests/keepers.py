"""Notebook classes whose own code pickle runs while it rebuilds an object, each keeping
the list it is given (`items or []`): a `__reduce__`, a `__setstate__` (one that counts
the list too), a `__new__` given `__getnewargs__`, a dict subclass's `__setitem__`. A
step `a.append(5); k = Keeper(a)` (`KEEP`) builds from a list it changed; the tests of
`engine/keep/own_code.py` (kernel and kernel-free) run them."""

KEEPS = "    def __init__(self, items=None):\n        self.items = items or []\n"
REDUCE = (
    "class Keeper:\n" + KEEPS + "    def __reduce__(self):\n        return Keeper, (self.items,)"
)
SETSTATE = (
    "class Keeper:\n"
    + KEEPS
    + "    def __setstate__(self, state):\n        self.items = state['items'] or []"
)
DERIVED = (
    "class Keeper:\n"
    + KEEPS
    + "        self.n = len(self.items)\n"
    + "    def __getstate__(self):\n        return {'items': self.items}\n"
    + "    def __setstate__(self, state):\n"
    + "        self.items = state['items']\n        self.n = len(self.items)"
)
NEWARGS = """class Keeper:
    def __new__(cls, items=None):
        self = object.__new__(cls)
        self.items = items or []
        return self
    def __getnewargs__(self):
        return (self.items,)
    def __getstate__(self):
        return None"""
DICT = """class Keeper(dict):
    def __setitem__(self, k, v):
        super().__setitem__(k, v or [])"""
KEEP = "%%step keep\na.append(5)\nk = Keeper(a)"
KEEP_DICT = "%%step keep\na.append(5)\nk = Keeper()\nk['x'] = a"
PROBE = "(a, k.items, k.items is a)"
# (class, step, probe) of each kind
CASES = {
    "reduce": (REDUCE, KEEP, PROBE),
    "setstate": (SETSTATE, KEEP, PROBE),
    "derived": (DERIVED, KEEP, "(a, k.items, k.n, k.items is a)"),
    "newargs": (NEWARGS, KEEP, PROBE),
    "setitem": (DICT, KEEP_DICT, "(a, k, k['x'] is a)"),
}
