"""The scratch directory of one `verify` call: where passes run, so that verifying never
writes next to the user's notebook.

    ROOT/                    a fresh temp directory, removed at the end (unless --keep)
      kernels/               the kernelspec of this interpreter
      tmp/                   the kernels' TMPDIR, apart from the notebooks' folders
      secret.key             the per-user key of the stores made here
      01-NAME/               one per notebook, removed as soon as it is verified
        plain-1/ plain-2/    a copy of the notebook's folder for each plain pass
        stepped/             one copy shared by the two stepped passes
        store/               their store (RESUMABLE_CELLS_DIR), fresh
        *.log                the kernels' own output

With `in_place`, every pass runs in the notebook's own folder (for a folder too big to
copy, or a notebook that reads `../data`); the store is still fresh and in ROOT.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .runner import write_kernelspec

MAX_COPY_BYTES = 2 << 30  # a folder bigger than this is not copied (use --in-place)
MAX_COPY_FILES = 20_000
# Never copied: version control, editor checkpoints, caches and the user's own store.
IGNORED = (".git", ".hg", ".ipynb_checkpoints", "__pycache__", ".resumable_cells")


class FolderTooBig(Exception):
    """The notebook's folder is too big to copy for each pass."""


class Workspace:
    def __init__(self, *, root: Path | None = None, keep: bool = False, in_place: bool = False):
        """A new scratch directory, or (`root`) the one another process made: a worker
        of `--jobs` uses it and leaves its removal to its maker."""
        self.owned = root is None
        self.root = Path(root or tempfile.mkdtemp(prefix="rc-verify-")).resolve()
        self.keep = keep
        self.in_place = in_place
        (self.root / "tmp").mkdir(exist_ok=True)
        self.kernels = self.root / "kernels"
        if self.owned:
            write_kernelspec(self.kernels)

    def notebook_dir(self, notebook: Path, number: int) -> Path:
        """The scratch directory of the `number`th notebook of the call."""
        d = self.root / f"{number:02d}-{notebook.stem}"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def folder(self, notebook: Path, into: Path) -> Path:
        """The working directory of a pass: a fresh copy of the notebook's folder at
        `into` (or, in place, the folder itself)."""
        source = notebook.resolve().parent
        if self.in_place:
            return source
        check_copyable(source)
        shutil.copytree(source, into, symlinks=True, ignore=shutil.ignore_patterns(*IGNORED))
        return into

    def env(self, notebook: Path, store: Path | None = None) -> dict[str, str]:
        """The kernel's environment: this process's, with the notebook's session name,
        the workspace's key file and temp directory, and `store` (or none) as the store.
        A team cache is never used (the kernel's command line also says so)."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("RESUMABLE_CELLS_DIR", "RESUMABLE_CELLS_REMOTE")
        }
        env.update(
            JPY_SESSION_NAME=notebook.name,
            RESUMABLE_CELLS_KEY_FILE=str(self.root / "secret.key"),
            TMPDIR=str(self.root / "tmp"),
            PYTHONUNBUFFERED="1",
        )
        if store is not None:
            env["RESUMABLE_CELLS_DIR"] = str(store)
        return env

    def discard(self, directory: Path) -> None:
        if not self.keep:
            shutil.rmtree(directory, ignore_errors=True)

    def close(self) -> None:
        if self.owned and not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_copyable(folder: Path) -> None:
    """Raise FolderTooBig when `folder` holds more than MAX_COPY_BYTES or MAX_COPY_FILES
    (stopping the walk as soon as it does: a home directory is not walked to the end)."""
    size = files = 0
    for path, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in IGNORED]
        for n in names:
            try:
                size += os.lstat(os.path.join(path, n)).st_size
            except OSError:
                continue  # vanished while walking: nothing to copy either
            files += 1
            if size > MAX_COPY_BYTES or files > MAX_COPY_FILES:
                raise FolderTooBig(
                    f"the folder {folder} is too big to copy for each pass (more than "
                    f"{MAX_COPY_BYTES >> 30} GiB or {MAX_COPY_FILES} files); "
                    "verify it with --in-place"
                )
