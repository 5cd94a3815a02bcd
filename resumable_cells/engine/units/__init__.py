"""The unit of an entry: a step's values that share objects (with each other or with
its inputs), stored as one pickle stream so that one object stays one object. Used by
both `keep/` (writing and checking it) and `restore/` (loading and applying it)."""
