"""Running steps: the `Engine` a kernel's steps share (`engine`), one step's execution
(`execution`) with its entry (`entry`), record (`recording`), inputs (`inputs`) and
body (`cellcode`); the analysis of a cell's code (`analysis`, `nsreads`, `nondeterminism`), the
tripwire that watches a pure step (`tripwire`), the run with its clock, seed and budget
(`runs`), the `step` object (`stepapi`) and the check on step names (`cellnames`)."""
