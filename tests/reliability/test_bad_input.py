"""Bad input is a one-line error that says what is wrong and what is accepted; fuzzed
arguments and values never produce anything but that."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from IPython.core.error import UsageError

from resumable_cells.hashing import Unhashable, digest


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    import os

    from IPython.testing.globalipapp import start_ipython

    work = tmp_path_factory.mktemp("work")
    old = os.getcwd()
    os.chdir(work)
    os.environ["RESUMABLE_CELLS_DIR"] = str(work / "store")
    ip = start_ipython()
    ip.run_line_magic("load_ext", "resumable_cells")
    yield ip
    ip.run_line_magic("unload_ext", "resumable_cells")
    os.environ.pop("RESUMABLE_CELLS_DIR")
    os.chdir(old)


@pytest.mark.parametrize(
    "kind, line, expected",
    [
        ("cell", "--bogus", "unrecognized arguments: --bogus"),
        ("cell", "s --deps no/such/*.csv", "matches no file"),
        ("line", "config --size-limit lots", "is not a size; use a number"),
        ("line", "config --size-limit 0", "must be more than 0"),
        ("line", "why", "required: name"),
        ("line", "why nosuch", "no cached entry"),
        ("line", "budget --steps -1", "negative; limits are 0 or more"),
        ("line", "budget --tokens many", "is not a number"),
        ("line", "frobnicate", "unknown subcommand 'frobnicate'. Use one of"),
        ("line", "clear", "give a step name or --all"),
    ],
)
def test_mistakes_are_one_line_usage_errors(shell, kind, line, expected):
    with pytest.raises(UsageError) as err:
        if kind == "cell":
            shell.run_cell_magic("step", line, "x = 1")
        else:
            shell.run_line_magic("step", line)
    message = str(err.value)
    assert expected in message
    assert "\n" not in message.strip()


FLAGS = ["--effect", "--force", "--ignore", "--version", "--deps", "--new", "--all", "--steps",
         "--tokens", "--cost", "--size-limit", "--dir", "-1", "1", "abc", "'", '"', "--"]  # fmt: skip
words = st.lists(st.one_of(st.sampled_from(FLAGS), st.text(max_size=8)), max_size=6)


@given(words)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_fuzzed_cell_magic_arguments_parse_or_raise_usage_error(shell, parts):
    line = " ".join(p for p in parts if p not in ("--dir",))
    try:
        shell.run_cell_magic("step", line, "fuzz_value = 1")
    except UsageError:
        pass


SUBCOMMANDS = ["status", "why", "plan", "clear", "run", "budget", "config", "help", "timeline"]


@given(st.sampled_from(SUBCOMMANDS), words)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_fuzzed_subcommands_parse_or_raise_usage_error(shell, sub, parts):
    # Destructive or environment-changing spellings are exercised by their own tests.
    parts = [
        p for p in parts if p not in ("--dir", "--all", "--new", "--steps", "--tokens", "--cost")
    ]
    line = " ".join([sub, *parts])
    try:
        shell.run_line_magic("step", line)
    except UsageError:
        pass


arrays = hnp.arrays(
    dtype=st.one_of(hnp.integer_dtypes(), hnp.floating_dtypes(), hnp.datetime64_dtypes()),
    shape=hnp.array_shapes(max_dims=3, max_side=5),
)
leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.complex_numbers(), st.text(),
    st.binary(), arrays, st.sampled_from([len, print, int, np.sum, np.float64(2.5)]),
)  # fmt: skip
nested = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.text(), st.integers()), inner, max_size=4),
        st.frozensets(st.one_of(st.integers(), st.text(), st.tuples(st.integers())), max_size=4),
    ),
    max_leaves=15,
)


@given(nested)
@settings(max_examples=300, deadline=None)
def test_fuzzed_values_hash_deterministically_or_say_why_not(value):
    try:
        d = digest(value)
    except Unhashable as err:
        assert err.path
        return
    assert digest(value) == d
    assert digest(copy.deepcopy(value)) == d


def test_arrays_with_nan_hash_stably():
    a = np.array([np.nan, 1.0])
    assert digest(a) == digest(a.copy())
