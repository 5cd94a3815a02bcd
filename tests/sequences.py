"""Random notebooks and random ways of running them (hypothesis strategies), for the test
that runs each in a plain kernel and a `%%step` kernel side by side.

A notebook is cells of one to three statements over a few names, each statement drawn
for the kinds of value its names hold at that point of a first run in order: lists,
dicts, arrays, tuples, views and iterators, functions reading and changing globals,
closures, classes and their instances, partials, enums, regex matches, deques,
defaultdicts, namespaces, frames, seeded random numbers. Most cells end by showing a
value the way a user would (a `print`, or the value as the cell's last line). A session
then runs the notebook in order and does what users do next: runs a cell again, edits
one, runs a plain cell that changes a value, restarts (cleanly or by a crash) and runs
all again, prints what every name reaches. Nothing drawn depends on the process (no
`id()`, no addresses, no string hashing order), so a plain kernel's outputs are the
truth the stepped kernel's must match, execution by execution.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

NAMES = ("a", "b", "c", "d", "e", "g", "h")
IMPORTS = (
    "import collections, dataclasses, enum, functools, itertools, os, random, re, types\n"
    "import warnings\nimport numpy as np\n"
    "@dataclasses.dataclass\nclass Point:\n    x: object\n    tags: list"
)

# Defined in a plain cell after each start, in both kernels: what every name reaches,
# with identity (each object numbered at its first visit, `@n` after) and the memory
# arrays share. Iterators are shown by their reduce (what they iterate and where). Every
# object numbered is held until the probe ends: a temporary it made (a class's attributes
# as a dict) would free its id for an object met later.
PROBE_SETUP = """
def _probe():
    import numpy as np, types, functools, collections, re
    seen, arrays, held = {}, [], []
    def walk(v, depth=0):
        if depth > 6:
            return '...'
        if v is None or isinstance(v, (bool, int, float, str, bytes)):
            return repr(v)
        if id(v) in seen:
            return f'@{seen[id(v)]}'
        seen[id(v)] = me = len(seen)
        held.append(v)
        w = lambda x: walk(x, depth + 1)
        if isinstance(v, (list, tuple, collections.deque)):
            return f'#{me}{type(v).__name__}[' + ','.join(map(w, v)) + ']'
        if isinstance(v, dict):
            return f'#{me}{type(v).__name__}{{' + ','.join(f'{k!r}:{w(x)}' for k, x in v.items()) + '}'
        if isinstance(v, (set, frozenset)):
            return f'#{me}{sorted(v)!r}'
        if isinstance(v, np.ndarray):
            arrays.append((me, v))
            return f'#{me}a{v.tolist()}'
        if isinstance(v, (type({}.keys()), type({}.values()), type({}.items()))):
            return f'#{me}view({w(v.mapping)})'
        if type(v).__name__ in ('list_iterator', 'tuple_iterator', 'iterator'):
            return f'#{me}iter{w(list(v.__reduce__()[1:]))}'
        if isinstance(v, functools.partial):
            return f'#{me}partial({v.func.__name__},{w(list(v.args))},{w(v.keywords)})'
        if isinstance(v, types.FunctionType):
            cells = [c.cell_contents for c in (v.__closure__ or ())]
            return f'#{me}fn:{v.__name__}({w(list(v.__defaults__ or ()))},{w(cells)})'
        if isinstance(v, type):
            return f'#{me}class:{v.__name__}{w({k: x for k, x in vars(v).items() if not k.startswith("__") and not callable(x)})}'
        if isinstance(v, types.SimpleNamespace) or type(v).__module__ == '__main__':
            return f'#{me}{type(v).__name__}{w(vars(v))}'
        if type(v).__name__ in ('generator',):
            return f'#{me}generator'
        return f'#{me}{type(v).__name__}:' + re.sub(' at 0x[0-9a-f]+', '', repr(v))
    names = sorted(n for n in globals() if not n.startswith('_') and n[:1] in 'abcdegh' and len(n) == 1)
    out = [f'{n}={walk(globals()[n])}' for n in names]
    mem = sorted((a, b) for a, x in arrays for b, y in arrays if a < b and np.shares_memory(x, y))
    return '; '.join(out) + f' | shared memory {mem}'
"""
PROBE = "print(_probe())"
# What a user asks of the kernel itself: its last results, its names.
LOOKS = (
    "print(repr(_))",
    "print(sorted(k for k in globals() if not k.startswith('_')))",
    "%who",
    "print(sorted(Out))",
)


@dataclass
class Cell:
    body: str
    plain: bool = False

    def code(self) -> str:
        return self.body if self.plain else "%%step\n" + self.body


@dataclass
class Session:
    """The notebook's cells and what is done with them: ("run", i), ("edit", i, body),
    ("plain", code), ("probe",), ("restart", "clean" | "kill")."""

    cells: list[Cell]
    ops: list[tuple] = field(default_factory=list)

    def describe(self) -> str:
        lines = [f"[{i}]{' plain' if c.plain else ''}\n{c.body}" for i, c in enumerate(self.cells)]
        return "\n".join(lines) + "\nops: " + repr(self.ops)


class _Draw:
    """Statements for the kinds the names hold, tracked as the first run would leave them."""

    def __init__(self, draw, frames: bool):
        self.draw = draw
        self.frames = frames
        self.kinds: dict[str, str] = {}
        self.fresh = 0

    def pick(self, options):
        return self.draw(st.sampled_from(sorted(options) if isinstance(options, set) else options))

    def num(self, lo: int = 0, hi: int = 9) -> int:
        return self.draw(st.integers(lo, hi))

    def of(self, *kinds: str) -> list[str]:
        return [n for n, k in sorted(self.kinds.items()) if k in kinds]

    def target(self) -> str:
        return self.pick(NAMES)

    def operand(self) -> str:
        """A name bound now (to hold it in another value), or a number."""
        bound = sorted(self.kinds)
        return self.pick([*bound, str(self.num())]) if bound else str(self.num())

    def statement(self) -> str:
        makers = [self.bind_new, self.bind_new, self.bind_from, self.change, self.change]
        makers += [self.warn] if self.num(0, 5) == 0 else []
        makers += [self.define] if self.num(0, 3) == 0 else []
        return self.pick(makers)()

    def bind_new(self) -> str:
        n = self.target()
        makers = {
            "list": lambda: f"{n} = [{self.num()}, {self.operand()}]",
            "dict": lambda: f"{n} = {{'k': {self.operand()}, 'j': {self.num()}}}",
            "array": lambda: f"{n} = np.arange({self.num(2, 8)}.0)",
            "int": lambda: f"{n} = {self.num()}",
            "set": lambda: f"{n} = {{{self.num()}, {self.num()}}}",
            "deque": lambda: f"{n} = collections.deque([{self.num()}], maxlen=3)",
            "ddict": lambda: f"{n} = collections.defaultdict(list)",
            "match": lambda: f"{n} = re.search('b+', 'a' + 'b' * {self.num(1, 5)})",
            "rand": lambda: f"random.seed({self.num()})\n{n} = random.random()",
            "rng": lambda: f"{n} = np.random.default_rng({self.num()}).integers(0, 100, 4)",
            "ns": lambda: f"{n} = types.SimpleNamespace(v={self.operand()})",
            "nprand": lambda: f"np.random.seed({self.num()})\n{n} = np.random.randint(0, 100, 3)",
            "count": lambda: f"{n} = itertools.count({self.num()})",
            "bytes": lambda: f"{n} = bytearray(b'ab{self.num()}')",
            "point": lambda: f"{n} = Point({self.operand()}, [{self.num()}])",
            "env": lambda: f"os.environ['RC_SEQ'] = '{self.num()}'\n{n} = os.environ['RC_SEQ']",
            "grid": lambda: (
                f"{n} = np.arange(12.0).reshape(3, 4)" + self.pick(["", ".T", "[1:, ::2]"])
            ),
        }
        kind = self.pick(list(makers))
        code = makers[kind]()
        self.kinds[n] = {"rand": "float", "rng": "array", "nprand": "array", "count": "iter",
                         "env": "str", "grid": "array"}.get(kind, kind)  # fmt: skip
        return code

    def bind_from(self) -> str:
        if not self.kinds:
            return self.bind_new()
        src = self.pick(sorted(self.kinds))
        kind, n = self.kinds[src], self.target()
        options = [("alias", kind), ("tuple", "tuple"), ("holder", "list"), ("eval", kind)]
        options += [("globals", kind), ("exec", kind), ("setglobal", kind)]
        if kind in ("list", "dict", "array", "set"):
            options += [("copy", kind)]
        if kind in ("list", "array"):
            options += [("slice", kind), ("iter", "iter"), ("gen", "gen")]
        if kind == "list":
            options += [("sorted", "list")]
        if kind == "array" and self.frames:
            options += [("frame", "frame"), ("series", "series")]
        if kind == "dict":
            options += [("view", "view"), ("chain", "chain")]
        if kind in ("list", "dict", "set", "deque", "tuple"):
            options += [("partial", "partial"), ("lambda", "func")]
        how, new_kind = self.pick(options)
        code = {
            "alias": f"{n} = {src}",
            "eval": f"{n} = eval('{src}')",
            "globals": f"{n} = globals()['{src}']",
            "exec": f"exec('{n} = {src}')",
            "setglobal": f"globals()['{n}'] = {src}",
            "tuple": f"{n} = ({src}, {self.num()})",
            "holder": f"{n} = [{src}, {self.operand()}]",
            "copy": f"{n} = {src}.copy()",
            "slice": f"{n} = {src}[1:]",
            "iter": f"{n} = iter({src})",
            "gen": f"{n} = (v for v in {src})",
            "sorted": f"{n} = sorted({src}, key=repr)",
            "view": f"{n} = {src}.{self.pick(['keys', 'values', 'items'])}()",
            "chain": f"{n} = collections.ChainMap({src}, {{}})",
            "partial": f"{n} = functools.partial(len, {src})",
            "lambda": f"{n} = lambda: len({src})",
            "frame": f"{n} = pd.DataFrame({{'x': {src}}})",
            "series": f"{n} = pd.Series({src}, name='s')",
        }[how]
        self.kinds[n] = new_kind
        return code

    def warn(self) -> str:
        return f"warnings.warn('careful {self.num()}')"

    def define(self) -> str:
        """A function, closure, class or enum over what the notebook holds."""
        n = self.target()
        sized = self.of("list", "dict", "set", "deque", "tuple", "array")
        what = self.pick(
            ["closure", "class", "enum", "default", "rebinder"]
            + (["reader", "changer"] if sized else [])
        )
        self.fresh += 1
        name = f"F{self.fresh}"
        if what == "reader":
            src = self.pick(sized)
            self.kinds[n] = "func"
            return f"def {name}(extra=0):\n    return len({src}) + extra\n{n} = {name}"
        if what == "changer":
            lists = self.of("list")
            if not lists:
                return self.bind_new()
            src = self.pick(lists)
            self.kinds[n] = "func"
            return (f"def {name}():\n    {src}.append(len({src}))\n    return len({src})\n"
                    f"{n} = {name}")  # fmt: skip
        if what == "rebinder":  # a function that rebinds a global when called
            self.kinds[n] = "func"
            return (f"def {name}():\n    global {n}\n    {n} = [{self.num()}]\n    return {n}\n"
                    f"{n} = {name}")  # fmt: skip
        if what == "default":  # state kept in a default argument
            self.kinds[n] = "func"
            return f"def {name}(acc=[]):\n    acc.append(len(acc))\n    return acc\n{n} = {name}"
        if what == "closure":
            self.kinds[n] = "func"
            return (f"def {name}():\n    box = [{self.num()}]\n    def bump():\n"
                    f"        box[0] += 1\n        return box[0]\n    return bump\n{n} = {name}()")  # fmt: skip
        if what == "class":
            self.kinds[n] = "inst"
            return (f"class {name}:\n    shared = [{self.num()}]\n    def size(self):\n"
                    f"        return len(self.shared)\n{n} = {name}()\n{n}.v = {self.operand()}")  # fmt: skip
        self.kinds[n] = "enum"
        return (
            f"class {name}(enum.Enum):\n    RED = 1\n    BLUE = {self.num(2, 9)}\n{n} = {name}.BLUE"
        )

    def change(self) -> str:
        if not self.kinds:
            return self.bind_new()
        n = self.pick(sorted(self.kinds))
        kind = self.kinds[n]
        options = {
            "list": [
                f"{n}.append({self.operand()})",
                f"{n}[0] = {self.operand()}",
                f"{n}.pop()",
                f"{n} += [{self.num()}]",
                f"{n} = {n} + [{self.num()}]",
                f"{n}.append(1)\n1 / 0",
            ],  # fmt: skip
            "dict": [f"{n}['{self.pick('kjx')}'] = {self.operand()}", f"{n}.pop('j', None)"],
            "array": [f"{n} += {self.num(1, 3)}", f"{n}[0] = {self.num()}", f"{n}[::2] *= 2"],
            "int": [f"{n} += 1"],
            "float": [f"{n} = round({n} * 10, 3)"],
            "set": [f"{n}.add({self.num()})"],
            "deque": [f"{n}.append({self.num()})"],
            "ddict": [f"{n}['{self.pick('xy')}'].append({self.num()})"],
            "ns": [f"{n}.w = {self.operand()}"],
            "inst": [f"{n}.v = {self.operand()}", f"type({n}).shared.append(1)"],
            "iter": [f"next({n}, None)"],
            "gen": [f"next({n}, None)"],
            "func": [f"{n}()"],
            "chain": [f"{n}['q'] = {self.num()}"],
            "bytes": [f"{n}[0] = {self.num(65, 90)}", f"{n} += b'z'"],
            "point": [f"{n}.tags.append({self.num()})", f"{n}.x = {self.operand()}"],
            "str": [f"{n} = {n} + 'x'"],
            "frame": [f"{n}['y'] = {n}['x'] * {self.num(1, 3)}", f"{n}.loc[0, 'x'] = {self.num()}"],
            "series": [f"{n}.iloc[0] = {self.num()}", f"{n} = {n} + 1"],
        }.get(kind, [f"del {n}"])
        code = self.pick(options)
        if code.startswith("del "):
            del self.kinds[n]
        return code

    def show(self) -> str:
        """How a user looks at a value: printed, or as the cell's last line."""
        if not self.kinds:
            return "print('nothing yet')"
        n = self.pick(sorted(self.kinds))
        kind = self.kinds[n]
        if kind in ("iter", "gen"):
            return f"print(next({n}, 'end'))"
        if kind in ("func", "partial"):
            return f"print({n}())"
        if kind == "inst":
            return f"print({n}.v, {n}.size())"
        if self.num(0, 3) == 0 and len(self.kinds) > 1:
            return f"print({n} is {self.pick(sorted(self.kinds))})"
        return n if self.num(0, 1) else f"print({n})"

    def body(self) -> str:
        lines = [self.statement() for _ in range(self.num(1, 3))]
        if self.num(0, 4):
            lines.append(self.show())
        return "\n".join(lines)


@st.composite
def sessions(draw, max_cells: int = 6, max_ops: int = 8) -> Session:
    frames = draw(st.integers(0, 3)) == 0  # pandas costs a second a kernel
    d = _Draw(draw, frames)
    cells = [Cell(IMPORTS + ("\nimport pandas as pd" if frames else ""), plain=draw(st.booleans()))]
    for _ in range(draw(st.integers(2, max_cells))):
        cells.append(Cell(d.body(), plain=draw(st.integers(0, 4)) == 0))
    ops: list[tuple] = [("run", i) for i in range(len(cells))]
    for _ in range(draw(st.integers(1, max_ops))):
        kind = draw(
            st.sampled_from(["rerun", "rerun", "edit", "plain", "probe", "restart", "look"])
        )
        if kind == "rerun":
            ops.append(("run", draw(st.integers(1, len(cells) - 1))))
        elif kind == "edit":
            ops.append(("edit", draw(st.integers(1, len(cells) - 1)), d.body()))
        elif kind == "plain":
            ops.append(("plain", d.statement()))
        elif kind == "look":
            ops.append(("plain", draw(st.sampled_from(LOOKS))))
        elif kind == "probe":
            ops.append(("probe",))
        else:
            ops.append(("restart", draw(st.sampled_from(["clean", "clean", "kill"]))))
            upto = draw(st.integers(1, len(cells)))
            ops += [("run", i) for i in range(upto)]
    ops.append(("probe",))
    return Session(cells, ops)
