"""A step's name identifies it in the record, the plan and `%step why`, so two cells
that share a name but not their code are a mistake worth a warning. The same name with
the same code in two cells is not: the quickstart runs `fit` again further down to show
that going back is free, and each cell keeps its own row and badge.

Cells are told apart by the id the frontend sends (JupyterLab, Notebook 7); without ids
(nbclient, a terminal) an edited cell cannot be told from another one, so nothing is said.
"""

from __future__ import annotations

import xxhash


class Names:
    """The code and the cell each step name last ran with, in this kernel session."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[str, str, int | None]] = {}

    def check(
        self, name: str, normalised: str, cell_id: str | None, count: int | None
    ) -> str | None:
        """A warning when `name` last ran in another cell with other code, else None."""
        if cell_id is None:
            return None
        code = xxhash.xxh3_64_hexdigest(normalised.encode())
        before = self.seen.get(name)
        self.seen[name] = (code, cell_id, count)
        if before is None or before[0] == code or before[1] == cell_id:
            return None
        this = f"this cell (In [{count}])" if count else "this cell"
        other = f"the cell that ran as In [{before[2]}]" if before[2] else "another cell"
        return (
            f"{this} and {other} are both named {name!r} but their code differs. A step "
            "name identifies one step in the record, `%step plan` and `%step why`: give "
            "one of them another name (`%%step NAME`)."
        )
