"""After a pure step's live run: what it changed (`changes`), how its values share
objects (`sharing`), storing them as an entry and loading them back to check that a hit
would serve what the live run had (`build`, `value_check`, `unit_check`), and whether it is
cached at all (`admit`, with `advice` for values that cannot be stored)."""
