"""What the benchmarks rely on: equal digests for a value, its deep copy, its store/restore
round trip and in another process; restored values equal to the originals. Small sizes;
timings live in bench/, never here."""

from __future__ import annotations

import copy
import os
import subprocess
import sys

import pytest

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")

from resumable_cells.hashing import Unhashable, digest  # noqa: E402
from resumable_cells.hashing import arrays as hashing_arrays  # noqa: E402
from resumable_cells.storage.store import Store  # noqa: E402


@pytest.fixture(autouse=True)
def _key_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RESUMABLE_CELLS_KEY_FILE", str(tmp_path / "secret.key"))


def bench_frame(n: int = 1000) -> pd.DataFrame:
    """The benchmark's frame (bench/hash_frame.py) at a small size."""
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "f": rng.random(n),
            "i": rng.integers(0, 1 << 40, n),
            "s": [f"s{i % 997}" for i in range(n)],
            "c": pd.Categorical(rng.choice(["a", "b", "c"], n)),
            "d": pd.date_range("2020-01-01", periods=n, freq="s"),
        }
    )


def bench_dict(n: int = 1000) -> dict:
    """The benchmark's dict (bench/hash_dict.py) at a small size."""
    return {f"key{i}": ([i, i * 0.5, f"v{i}"] if i % 2 else f"value {i}") for i in range(n)}


def roundtrip(tmp_path, value):
    store = Store(tmp_path / "store")
    try:
        name = digest(value).hex()
        store.put_blob(name, value)
        return store.get_blob(name)
    finally:
        store.close()


VALUES = {
    "array": lambda: np.arange(10_000, dtype=np.float64).reshape(100, 100),
    "strided": lambda: np.arange(10_000, dtype=np.int32).reshape(100, 100)[::3, ::2],
    "fortran": lambda: np.asfortranarray(np.arange(60_000, dtype=np.float64).reshape(6000, 10)),
    "frame": bench_frame,
    "dict": bench_dict,
    "nested": lambda: {"a": [1, (2, 3), {"b": None}], "s": {3, "x"}, "t": (1.5, b"z")},
    "records": lambda: [
        {"id": i, "name": f"u{i}", "tags": ["a", str(i)], "ok": i % 2 == 0} for i in range(500)
    ],
    "record_map": lambda: {f"k{i}": {"a": i, "b": (1.5, None)} for i in range(500)},
}


@pytest.mark.parametrize("kind", sorted(VALUES))
def test_digest_stable_across_copy_and_roundtrip(tmp_path, kind):
    value = VALUES[kind]()
    d = digest(value)
    assert digest(copy.deepcopy(value)) == d
    restored = roundtrip(tmp_path, value)
    assert digest(restored) == d
    if isinstance(value, pd.DataFrame):
        pd.testing.assert_frame_equal(restored, value)
    elif isinstance(value, np.ndarray):
        np.testing.assert_array_equal(restored, value)
    else:
        assert restored == value


def test_array_digest_does_not_depend_on_memory_layout():
    a = np.random.default_rng(2).random((5000, 9))
    for view in (np.asfortranarray(a), a[::2], a[:, ::3], a.T.copy().T):
        assert digest(view) == digest(np.ascontiguousarray(view))
    assert digest(np.asfortranarray(a)) == digest(a)


def test_restored_large_array_is_equal_and_writable(tmp_path):
    a = np.random.default_rng(1).random((600, 600))  # > 1 MB: the numpy buffer route
    b = roundtrip(tmp_path, a)
    np.testing.assert_array_equal(a, b)
    assert b.flags.writeable
    b[0, 0] = -1.0  # the restored buffer is the value's own memory


def test_frame_digest_sees_every_column_change():
    df = bench_frame(500)
    d = digest(df)
    for col, new in [("f", 0.25), ("i", 7), ("s", "other"), ("c", "b"), ("d", pd.Timestamp(0))]:
        other = df.copy()
        other.loc[3, col] = new if df.loc[3, col] != new else df.loc[4, col]
        assert digest(other) != d, col


def test_string_columns_are_unambiguous():
    # Joined pieces must not collide when a string holds the separator.
    a = pd.Series(["a\x00b", "c"], dtype=object)
    b = pd.Series(["a", "b\x00c"], dtype=object)
    assert digest(a) != digest(b)
    assert digest(pd.Series(["", ""], dtype=object)) != digest(pd.Series([""], dtype=object))


def test_string_columns_with_missing_values(tmp_path):
    s = pd.Series(["x", None, "y", float("nan")] * 10_000, dtype=object)
    assert digest(s) == digest(s.copy(deep=True)) == digest(roundtrip(tmp_path, s))
    assert digest(s) != digest(s.fillna("z"))
    none_vs_nan = pd.Series(["x", None], dtype=object), pd.Series(["x", float("nan")], dtype=object)
    assert digest(none_vs_nan[0]) != digest(none_vs_nan[1])
    str_dtype = pd.Series(["a", None, "b"] * 20_000, dtype="str")
    assert digest(str_dtype) == digest(roundtrip(tmp_path, str_dtype))


def test_object_columns_across_chunk_boundaries():
    n = hashing_arrays._OBJ_CHUNK + 5
    mixed = pd.Series([f"s{i}" if i % 1000 else i for i in range(n)], dtype=object)
    assert digest(mixed) == digest(copy.deepcopy(mixed))
    changed = mixed.copy()
    changed.iloc[-1] = "changed"
    assert digest(changed) != digest(mixed)


def test_records_see_every_change():
    recs = VALUES["records"]()
    d = digest(recs)
    for change in (
        lambda r: r[-1]["tags"].append("x"),
        lambda r: r[3].update(ok=1),  # True -> 1 (a bool and an int differ)
        lambda r: r[0].pop("name"),
        lambda r: r.append({}),
        lambda r: r[1].update(tags={"a"}),  # a set: the general route
    ):
        other = copy.deepcopy(recs)
        change(other)
        assert digest(other) != d


def test_unhashable_path_names_the_element():
    import threading

    lock = threading.Lock()
    with pytest.raises(Unhashable) as err:
        digest({"cfg": [1, {"client": lock}]}, name="x")
    assert err.value.path == "x['cfg'][1]['client']"
    with pytest.raises(Unhashable) as err:
        digest(pd.Series(["a", lock], dtype=object), name="s")
    assert err.value.path == "s[1]"


def test_digest_same_in_other_processes_and_hash_seeds():
    code = (
        "import sys; sys.path.insert(0, 'tests');"
        "from test_bench_invariants import bench_frame, bench_dict;"
        "from resumable_cells.hashing import digest;"
        "print(digest(bench_frame()).hex(), digest(bench_dict()).hex(),"
        " digest({'a', 'b', 'c', frozenset({'x', 'y'})}).hex(),"
        " digest([{'id': i, 'tags': ['a', str(i)]} for i in range(100)]).hex())"
    )
    outs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        outs.add(out.stdout.strip())
    assert len(outs) == 1


def _serialize_roundtrip(value):
    from resumable_cells.storage import serialize

    main, buffers = serialize.dumps(value)
    return serialize.loads(main, [bytearray(b.raw()) for b in buffers]), len(buffers)


def test_string_arrays_travel_as_one_buffer_and_come_back_equal():
    n = 10_000
    plain = np.array([f"s{i % 313}" for i in range(n)], dtype=object)
    back, nbuf = _serialize_roundtrip(plain)
    assert nbuf == 1 and back.dtype == object and back.tolist() == plain.tolist()
    assert all(type(x) is str for x in back)
    back[0] = "changed"  # writable, like the original

    mixed = plain.copy()
    mixed[[3, 70, 9000]] = [None, float("nan"), 42]
    mixed[5] = np.str_("numpy string")  # a str subclass keeps its type
    mixed[6] = "with \udc80 surrogate"
    back, _ = _serialize_roundtrip(mixed)
    assert back[3] is None and back[70] != back[70] and back[9000] == 42
    assert type(back[5]) is np.str_ and back[6] == "with \udc80 surrogate"
    assert [x for i, x in enumerate(back) if i != 70] == [x for i, x in enumerate(mixed) if i != 70]

    grid = np.array([f"g{i}" for i in range(n)], dtype=object).reshape(100, 100)
    for arr in (grid, np.asfortranarray(grid), grid[::2, ::3]):
        back, _ = _serialize_roundtrip(arr)
        assert back.shape == arr.shape and (back == arr).all()

    nul = plain.copy()
    nul[7] = "a\x00b"  # the separator inside a value: plain pickling
    back, nbuf = _serialize_roundtrip(nul)
    assert nbuf == 0 and back.tolist() == nul.tolist()


def test_datetime_arrays_travel_out_of_band_and_come_back_as_they_were(tmp_path):
    n = 10_000
    base = np.arange(n, dtype=np.int64)
    arrays = [
        base.astype("M8[ns]"),
        base.astype(">m8[s]"),  # another byte order keeps it
        np.asfortranarray(base.astype("M8[D]").reshape(100, 100)),
    ]
    for arr in arrays:
        back, nbuf = _serialize_roundtrip(arr)
        assert nbuf == 1, arr.dtype  # numpy alone pickles these dtypes in band
        assert back.dtype == arr.dtype and back.shape == arr.shape and (back == arr).all()
        assert back.flags.f_contiguous == arr.flags.f_contiguous and back.flags.writeable
        back[0] = back[1]  # writable, like the original
    small, nbuf = _serialize_roundtrip(base[:10].astype("M8[s]"))
    assert nbuf == 0 and small.dtype == np.dtype("M8[s]")
    strided, _ = _serialize_roundtrip(arrays[0][::2])
    assert (strided == arrays[0][::2]).all()

    df = pd.DataFrame(
        {
            "d": pd.date_range("2020-01-01", periods=n, freq="s"),
            "z": pd.date_range("2020-01-01", periods=n, freq="h", tz="Europe/Paris"),
            "t": pd.to_timedelta(np.arange(n), unit="s"),
        }
    )
    df.loc[3, "d"] = pd.NaT
    restored = roundtrip(tmp_path, df)
    pd.testing.assert_frame_equal(restored, df)
    assert digest(restored) == digest(df)


def test_string_frame_round_trip_keeps_digest(tmp_path):
    df = bench_frame(20_000)
    df["o"] = pd.Series([f"o{i}" if i % 7 else None for i in range(20_000)], dtype=object)
    df["t"] = pd.Series([f"t{i}" if i % 5 else None for i in range(20_000)], dtype="str")
    restored = roundtrip(tmp_path, df)
    pd.testing.assert_frame_equal(restored, df)
    assert digest(restored) == digest(df)


def test_object_columns_of_plain_values(tmp_path):
    n = hashing_arrays._OBJ_CHUNK + 100
    s = pd.Series([i if i % 3 else (None if i % 2 else float(i)) for i in range(n)], dtype=object)
    d = digest(s)
    assert digest(copy.deepcopy(s)) == d == digest(roundtrip(tmp_path, s))
    changed = s.copy()
    changed.iloc[-1] = -1
    assert digest(changed) != d
    ones = pd.Series([1] * 10, dtype=object)
    trues = pd.Series([True] * 10, dtype=object)
    floats = pd.Series([1.0] * 10, dtype=object)
    assert len({digest(ones), digest(trues), digest(floats)}) == 3
