"""A teammate's engine for the browser tests: runs two steps in IPython's in-process shell
with a store of its own and pushes their entries to the team cache, all as the
environment says (RESUMABLE_CELLS_DIR, _KEY_FILE, _TEAM_KEY, _REMOTE, _IDENTITY)."""

from IPython.testing import globalipapp

STEPS = (
    "%%step team_load\nteam_df = list(range(100))",
    "%%step team_sum\nteam_s = sum(team_df)",
)

globalipapp.start_ipython()
shell = globalipapp.get_ipython()
shell.run_line_magic("load_ext", "resumable_cells")
for cell in STEPS:
    shell.run_cell(cell).raise_error()
shell.run_line_magic("step", "push")
