"""The Sealer on its own (no kernel, no server): what opens, and every way a sealed
object can be altered, cut, moved or re-keyed, each refused with a SealError; and where
the team keys may come from."""

from __future__ import annotations

import os

import pytest

from resumable_cells.errors import SealError, TamperedError, TeamCacheError
from resumable_cells.storage import seal, teamkey
from resumable_cells.storage.seal import FRAME, OVERHEAD, Sealer, split_frames

KEY, OLD, OTHER = b"k" * 32, b"o" * 32, b"x" * 32
DATA = os.urandom(2 * FRAME + 1000)  # three frames, the last one short


def test_objects_open_as_they_were_sealed_whole_or_frame_by_frame():
    s = Sealer(KEY)
    sealed = s.seal("blob", "n1", DATA)
    assert len(sealed) == len(DATA) + 3 * OVERHEAD
    assert DATA[:1000] not in sealed
    assert s.open("blob", "n1", sealed) == DATA
    assert s.open("entry", "e", s.seal("entry", "e", b"")) == b""
    # The same bytes streamed: frames of any size, one per piece.
    pieces = [DATA[:10], DATA[10:5000], DATA[5000:]]
    frames = list(s.seal_frames("blob", "n1", pieces))
    assert b"".join(s.open_frames("blob", "n1", frames)) == DATA
    assert s.open("blob", "n1", b"".join(frames)) == DATA
    assert sealed != s.seal("blob", "n1", DATA)  # fresh nonces each time


@pytest.mark.parametrize(
    "change",
    [
        "bit flipped", "last frame dropped", "frames swapped", "tail cut", "other name",
        "other kind", "frame from another object", "extra frame", "final flag cleared",
    ],
)  # fmt: skip
def test_an_altered_object_never_opens(change):
    s = Sealer(KEY)
    frames = [bytes(f) for f in split_frames(s.seal("blob", "n1", DATA))]
    kind, name = "blob", "n1"
    if change == "bit flipped":
        frames[1] = frames[1][:500] + bytes([frames[1][500] ^ 1]) + frames[1][501:]
    elif change == "last frame dropped":
        frames = frames[:-1]
    elif change == "frames swapped":
        frames[0], frames[1] = frames[1], frames[0]
    elif change == "tail cut":
        frames[-1] = frames[-1][:-1]
    elif change == "other name":
        name = "n2"
    elif change == "other kind":
        kind = "entry"
    elif change == "frame from another object":
        frames[1] = bytes(list(split_frames(s.seal("blob", "n2", DATA)))[1])
    elif change == "extra frame":
        frames.append(frames[-1])
    elif change == "final flag cleared":
        head = bytearray(frames[-1][: seal.HEADER.size])
        head[12] = 0
        frames[-1] = bytes(head) + frames[-1][seal.HEADER.size :]
    with pytest.raises(SealError, match="fails the team key") as err:
        s.open(kind, name, b"".join(frames))
    assert err.value.key_id is None
    assert isinstance(err.value, TamperedError)  # a miss where the tiers catch those


def test_another_key_is_named_and_the_previous_one_still_opens():
    old = Sealer(OLD).seal("entry", "e", b"payload")
    with pytest.raises(SealError, match="not configured here") as err:
        Sealer(KEY).open("entry", "e", old)
    assert err.value.key_id == Sealer(OLD).key_id
    rotated = Sealer(KEY, previous=OLD)
    assert rotated.open("entry", "e", old) == b"payload"
    assert not rotated.sealed_with_current(old)
    again = rotated.seal("entry", "e", b"payload")
    assert rotated.sealed_with_current(again)
    with pytest.raises(SealError, match="not configured here"):
        Sealer(OLD).open("entry", "e", again)
    with pytest.raises(SealError, match="not configured here"):
        Sealer(OTHER, previous=OLD).open("entry", "e", again)


def test_team_keys_come_from_the_environment_or_a_file_outside_the_store(tmp_path, monkeypatch):
    for var in (teamkey.KEY_ENV, teamkey.KEY_FILE_ENV, teamkey.PREVIOUS_ENV,
                teamkey.PREVIOUS_FILE_ENV):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    store = tmp_path / "store"
    store.mkdir()
    assert seal.from_settings(store) is None
    outside = tmp_path / "team.key"
    outside.write_text(KEY.hex() + "\n")
    monkeypatch.setenv(teamkey.KEY_FILE_ENV, str(outside))
    monkeypatch.setenv(teamkey.PREVIOUS_ENV, OLD.hex())
    assert teamkey.team_keys(store) == teamkey.TeamKeys(KEY, OLD)
    s = seal.from_settings(store)
    assert s is not None and s.open("entry", "e", Sealer(OLD).seal("entry", "e", b"x")) == b"x"

    inside = store / "keys" / "team.key"
    inside.parent.mkdir()
    inside.write_text(KEY.hex())
    monkeypatch.setenv(teamkey.KEY_FILE_ENV, str(inside))
    with pytest.raises(TeamCacheError, match="inside the store"):
        seal.from_settings(store)
    monkeypatch.setenv(teamkey.KEY_FILE_ENV, str(outside))
    monkeypatch.setenv(teamkey.PREVIOUS_ENV, "short")
    with pytest.raises(TeamCacheError, match="shorter than 16 bytes"):
        seal.from_settings(store)
    monkeypatch.delenv(teamkey.KEY_FILE_ENV)
    monkeypatch.setenv(teamkey.PREVIOUS_ENV, OLD.hex())
    with pytest.raises(TeamCacheError, match="no team key is"):
        seal.from_settings(store)


def test_reencrypt_needs_a_team_cache_and_a_team_key(monkeypatch, capsys):
    from resumable_cells import cli

    for var in ("RESUMABLE_CELLS_REMOTE", teamkey.KEY_ENV, teamkey.KEY_FILE_ENV):
        monkeypatch.delenv(var, raising=False)
    assert cli.main(["reencrypt"]) == 2
    assert "no team cache: give --remote URL" in capsys.readouterr().err
    # Nothing listens there: the key is asked for before the server.
    assert cli.main(["reencrypt", "--remote", "redis://127.0.0.1:9/0"]) == 2
    assert "no team key: the team cache redis://127.0.0.1:9/0 is off" in capsys.readouterr().err
