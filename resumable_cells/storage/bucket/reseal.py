"""Re-encrypting a bucket team cache under the current team key (`resumable-cells
reencrypt`), so that the previous key can be dropped after a rotation.

Each entry sealed with another key is opened with the previous key and written again
sealed with the current one (an entry's plaintext never changes under its key, so
overwriting it loses nothing). Each blob whose head is under another key gets a new
body: its frames are opened and sealed again one at a time, uploaded as a new upload,
then the head is replaced to name it and the old body is deleted, so that nothing
sealed with the old key stays behind. A reader copying the old body at that moment
finds it gone: a miss that runs the step, never a wrong value.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import obstore

from ...errors import TamperedError
from ..redis.reseal import ResealReport
from ..redis.transfer import Incomplete
from ..seal import Sealer
from . import crossing, layout, listing, transfer

log = logging.getLogger(__name__)


def reseal(store: Any, sealer: Sealer) -> ResealReport:
    """Seal every entry and blob in the bucket that is not under `sealer`'s current key
    again with it. Raises the bucket's errors."""
    report = ResealReport()
    for path, _ in list(listing.objects(store, layout.ENTRIES)):
        _entry(store, sealer, path.removeprefix(layout.ENTRIES), report)
    for path, _ in list(listing.objects(store, layout.HEADS)):
        _blob(store, sealer, path.removeprefix(layout.HEADS), report)
    return report


def _entry(store: Any, sealer: Sealer, key: str, report: ResealReport) -> None:
    raw = transfer.get(store, layout.entry_path(key))
    if raw is None:
        return
    if sealer.sealed_with_current(raw):
        report.current += 1
        return
    try:
        entry = crossing.entry_in(raw, key, sealer)
    except TamperedError as err:
        log.debug("entry %s was not re-encrypted", key[:12], exc_info=True)
        report.failed.append(str(err))
        return
    transfer.put(store, layout.entry_path(key), crossing.entry_out(entry, key, sealer))
    report.entries += 1


def _blob(store: Any, sealer: Sealer, name: str, report: ResealReport) -> None:
    raw = transfer.get(store, layout.head_path(name))
    if raw is None:
        return
    if sealer.sealed_with_current(raw):  # a head and its body are sealed together
        report.current += 1
        return
    try:
        meta = crossing.head_in(raw, name, sealer)
        plain = crossing.body_in(transfer.body_frames(store, name, meta), name, sealer)
        upload, frames = transfer.upload_body(store, name, meta.size, plain, sealer)
    except (TamperedError, Incomplete) as err:
        log.debug("blob %s was not re-encrypted", name[:12], exc_info=True)
        report.failed.append(str(err))
        return
    new = msgspec.structs.replace(meta, upload=upload, chunks=frames)
    transfer.put(store, layout.head_path(name), crossing.head_out(new, name, sealer))
    try:
        obstore.delete(store, layout.body_path(name, meta.upload))
    except Exception:  # refused or unreachable: the old body is left over, unnamed
        log.warning("the old body of blob %s was left in the bucket", name[:12], exc_info=True)
    report.blobs += 1
    report.bytes += meta.size
