"""A notebook class whose pickling lays it out otherwise: a board pickles as the parts
that hold items, so an empty part, made on first access, is gone after a round trip,
as plotly's empty figure parts are. The cells that make and change one, for the tests
of the unit's by-value copy (kernel, team cache and kernel-free)."""

BOARD = """class Part:
    def __init__(self):
        self.items = []

class Board:
    def __init__(self, spec=None):
        self.parts = {}
        for k, v in (spec or {}).items():
            self.part(k).items.extend(v)
    def part(self, k):
        return self.parts.setdefault(k, Part())
    def spec(self):
        return {k: list(p.items) for k, p in self.parts.items() if p.items}
    def __reduce__(self):
        return (Board, (self.spec(),))"""
MAKE = "%%step make\nboard = Board()\nboard.part('empty')\nboard.part('x').items.append(1)"
MAKE_FULL = "%%step make\nboard = Board()\nboard.part('x').items.append(1)"
GROW = "%%step grow\nboard.part('x').items.append(2)"
