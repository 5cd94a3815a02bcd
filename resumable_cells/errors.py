"""The package's exceptions, all under one root, `ResumableCellsError`.

    ResumableCellsError
    ├── StoreError             an entry or index row that cannot be trusted or read
    │   ├── BlobError          a blob file that is missing, truncated or fails authentication
    │   ├── TamperedError      something on the team cache that fails the team key
    │   │   └── SealError      a sealed object that cannot be opened (altered, cut short,
    │   │                      or sealed with a team key not configured here)
    │   └── NotWritten         an entry written behind that was not stored (a value changed
    │                          before its bytes were written, the kernel ending first)
    ├── TeamCacheError         a team cache that cannot be configured
    ├── Unhashable             a value that cannot be digested (names its path)
    ├── Unstorable             a value that cannot be pickled (names its variable)
    ├── Unfaithful             a result a hit could not give back as the live run left it
    ├── NotRestored            a value a hit left to read later that cannot be read
    ├── KeyComponentError      a component of a step's key that cannot be computed
    ├── MissingDeps            a `--deps` pattern that matches no file
    ├── BudgetExceeded         a live step that would start past a budget limit
    ├── StepRefused            a step refused for that reason, as the magic reports it
    └── CLIError               a command-line mistake (one line on stderr, status 2)

User mistakes inside a notebook become IPython's `UsageError` where the magics catch
them; these are what the package's own layers raise to each other.
"""

from __future__ import annotations


class ResumableCellsError(Exception):
    """The root of every exception resumable-cells raises on purpose."""


class StoreError(ResumableCellsError):
    """A stored entry or index row that cannot be trusted or read: a miss, with a warning."""


class BlobError(StoreError):
    """A blob that is missing, truncated or fails authentication."""


class BlobUnavailable(StoreError):
    """A blob the local store lacks that a team cache could not give when its value was
    read (unreachable, or the blob gone from it): nothing stored here is suspect."""


class TamperedError(StoreError):
    """Something on the team cache that fails the team key."""


class SealError(TamperedError):
    """A sealed object (an entry or blob encrypted for a tier) that cannot be opened.
    `key_id` names the team key it was sealed with when that key is not configured
    here (None when it is, and the object was altered or cut short)."""

    def __init__(self, message: str, key_id: str | None = None):
        super().__init__(message)
        self.key_id = key_id


class NotWritten(StoreError):
    """An entry whose blobs were written behind the user's back and that was not stored:
    a value changed in place before its bytes were written (they no longer digest as
    the value did when its step ended), or the writes were dropped (the kernel ended,
    the store was cleared)."""


class TeamCacheError(ResumableCellsError):
    """A team cache that cannot be configured (a bad URL, a missing or short team key)."""


class Unhashable(ResumableCellsError):
    """A value (at `path` inside an input) that cannot be digested."""

    # Elements of containers are hashed under this stand-in path; the real path
    # (`cfg['x']`) is only spelled out when hashing fails, so hashing a large dict
    # formats no strings.
    ELEMENT = "\x00elem"

    def __init__(self, path: str, why: str):
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why

    def rebased(self, prefix: str) -> Unhashable:
        """The same error with the element stand-in replaced by its real path."""
        if self.path.startswith(self.ELEMENT):
            return Unhashable(prefix + self.path[len(self.ELEMENT) :], self.why)
        return self


class Unstorable(ResumableCellsError):
    """A value (bound to `name`) that cannot be pickled."""

    def __init__(self, name: str, why: str):
        super().__init__(f"{name}: {why}")
        self.name = name
        self.why = why


class KeyComponentError(ResumableCellsError):
    """A component of the key could not be computed (fail closed: run live, uncached).
    `ways_out` is the sentence that tells the user what to do, when it is not the
    general one for a value that cannot be hashed."""

    def __init__(self, message: str, path: str = "", ways_out: str | None = None):
        super().__init__(message)
        self.path = path
        self.ways_out = ways_out


class MissingDeps(ResumableCellsError):
    """A --deps pattern that matches nothing: a mistake to report, not a key to fail."""


class BudgetExceeded(ResumableCellsError):
    """A new live step would start past one of the run's limits."""


class StepRefused(ResumableCellsError):
    """A step that would start past a budget limit, as the user is told."""


class NotServed(ResumableCellsError):
    """A session restore met a step it cannot serve as it was served or ran then: the
    restore stops there (`%step restore`)."""

    def __init__(self, step: str, why: str) -> None:
        super().__init__(f"{step}: {why}")
        self.step = step
        self.why = why


class CLIError(ResumableCellsError):
    """A command-line mistake: printed as one line, exit status 2."""


class NotRestored(ResumableCellsError):
    """A value a hit bound lazily whose blob could not be read or failed its check when
    something first read it: never used; the message names the step to run again."""


class Unfaithful(ResumableCellsError):
    """A step's result that a hit could not give back as the live run left it (a value
    sharing an object with a name the step does not read, an object that cannot be
    restored in place while another value holds it): the step is not cached. Raised
    while serving, the hit becomes a miss."""

    def __init__(self, name: str, why: str, way_out: str = ""):
        super().__init__(f"{name}: {why}")
        self.name = name
        self.why = why
        self.way_out = way_out
