"""`resumable-cells verify`: does putting `%%step` on every cell change a notebook?

Each notebook runs four times in fresh real kernels: as it is, twice (to learn which
cells are nondeterministic); with every code cell under `%%step` and a fresh store; and
again in a new kernel with that store. The report says, cell by cell, where the stepped
run differs from the plain run, where the replay differs from the live run, which steps
were not served the second time and why, and which cells hung.

Modules: `wrap` (cells under `%%step`), `workspace` (scratch copies, kernelspec,
environment), `runner` (one pass: a kernel, nbclient, the per-cell timeout), `compare`
(normalising and comparing outputs), `check` (one notebook's passes and comparison),
`results` + `report` (what was found, as text and JSON), `command` (the CLI).
"""
