"""Running steps: the `Engine` of a kernel, the analysis of a cell's code, the tripwire
that watches a pure step, the run (clock, seed, budget) and the `step` object."""
