"""A hit matches the warnings its live run showed against the filters in effect as
Python matches them (`engine/state/warned.py`): checked here against Python itself,
over filters made by `filterwarnings`, `simplefilter` and Python's own plain-text ones."""

from __future__ import annotations

import warnings

from hypothesis import given, settings
from hypothesis import strategies as st

from resumable_cells.engine.state import warned

CATEGORIES = [UserWarning, DeprecationWarning, RuntimeWarning, FutureWarning, Warning]
MESSAGES = ["careful", "Careful now", "divide by zero", "x"]
MODULES = ["__main__", "pandas.core.frame", "numpy", "mine"]
ACTIONS = ["error", "ignore", "always", "default", "module", "once"]

a_filter = st.tuples(
    st.sampled_from(ACTIONS),
    st.one_of(st.none(), st.sampled_from(["care", "div", ".*now", "x"])),
    st.sampled_from(CATEGORIES),
    st.one_of(st.none(), st.sampled_from(["__main__", "pandas", "numpy", "mi"])),
    st.sampled_from([0, 3, 7]),
    st.booleans(),  # a plain-text module, as Python's own default filters have
)


def python_says(w: warned.Warned, category: type[Warning]) -> str:
    """What Python does with the warning under the filters in effect: raise, show or
    nothing (a fresh registry: the first time at its place)."""
    with warnings.catch_warnings(record=True) as caught:  # (a copy of the filters)
        try:
            warnings.warn_explicit(w.message, category, w.filename, w.lineno, w.module, {})
        except Warning:
            return "error"
    return "show" if caught else "ignore"


@settings(max_examples=300, deadline=None)
@given(
    filters=st.lists(a_filter, max_size=5),
    category=st.sampled_from(CATEGORIES),
    message=st.sampled_from(MESSAGES),
    module=st.sampled_from(MODULES),
    lineno=st.sampled_from([3, 7, 9]),
)
def test_a_warning_is_matched_as_python_matches_it(filters, category, message, module, lineno):
    with warnings.catch_warnings():
        warnings.resetwarnings()
        for action, msg, cls, mod, ln, plain in reversed(filters):
            if plain and mod is not None:  # inserted as Python inserts its own
                warnings.filters.insert(0, (action, None, cls, mod, ln))
            else:
                warnings.filterwarnings(action, msg or "", cls, mod or "", ln)
        w = warned.Warned(f"builtins:{category.__qualname__}", message, "f.py", lineno, module, "")
        assert warned.action(w) == python_says(w, category)


def test_the_text_of_an_ignored_warning_is_left_out_of_the_replay():
    w = warned.Warned("builtins:UserWarning", "careful", "f.py", 3, "__main__", "f.py:3: W\n")
    outputs = [("stream", "stdout", "hi\n"), ("stream", "stderr", "before\nf.py:3: W\n")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert warned.replayed(outputs, [w]) == [
            ("stream", "stdout", "hi\n"),
            ("stream", "stderr", "before\n"),
        ]
        assert warned.raising([w]) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "UserWarning" in (warned.raising([w]) or "")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert warned.replayed(outputs, [w]) == outputs
