"""Running a step's body: as IPython would run the cell, with the `step` object bound
to the execution, and (for a pure step) the tripwire watching for effects."""
