"""Checkpoint storage: a local (or shared) directory, or any URI ``pyarrow.fs`` knows.

``Storage(uri)`` with a plain path (or ``file://``) writes through
:func:`plainstate.save` (temp file in the same directory, fsync, ``os.replace``):
a reader, or a process that resumes after a crash mid-write, sees the previous file or the
new one, never a partial one. Any other URI (``s3://bucket/run``, ``gs://...``,
``hdfs://...``) goes through ``pyarrow.fs.FileSystem.from_uri``: the bytes
(:func:`plainstate.to_bytes`) are written to a temporary key next to the final one, then
moved over it (object stores publish an object only when its upload completes, so the
final key is never partial either). Loading never unpickles (``plainstate.load``).

On a multi-node cluster, the default (``<run dir>/checkpoints``) is only reachable from
every node if the run directory is on a shared filesystem; otherwise pass an object-store
URI with ``--checkpoint-uri``.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from . import plainstate

CHECKPOINT_FORMAT = "islands-checkpoint/1"


def island_file(index: int) -> str:
    return f"island-{int(index):02d}.npz"


COORDINATOR_FILE = "coordinator.npz"


def is_local(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


class Storage:
    def __init__(self, uri: str) -> None:
        self.uri = uri
        if is_local(uri):
            self.fs = None
            self.root = os.path.abspath(uri[len("file://"):] if uri.startswith("file://")
                                        else uri)
        else:
            from pyarrow import fs as pafs

            self.fs, self.root = pafs.FileSystem.from_uri(uri)
            self.root = self.root.rstrip("/")

    def path(self, name: str) -> str:
        return f"{self.root}/{name}" if self.fs is not None else os.path.join(self.root, name)

    def save(self, name: str, tree: Any) -> None:
        if self.fs is None:
            os.makedirs(self.root, exist_ok=True)
            plainstate.save(self.path(name), tree)
            return
        data = plainstate.to_bytes(tree)
        final = self.path(name)
        tmp = self.path(f".tmp-{uuid.uuid4().hex}-{name}")
        self.fs.create_dir(self.root, recursive=True)
        with self.fs.open_output_stream(tmp) as f:
            f.write(data)
        try:
            self.fs.move(tmp, final)
        except (OSError, NotImplementedError):  # stores without rename: copy, then drop
            self.fs.copy_file(tmp, final)
            self.fs.delete_file(tmp)

    def exists(self, name: str) -> bool:
        if self.fs is None:
            return os.path.isfile(self.path(name))
        from pyarrow import fs as pafs

        return self.fs.get_file_info(self.path(name)).type == pafs.FileType.File

    def load(self, name: str) -> Any | None:
        """The tree in ``name``, or None when there is no such file. ValueError (one line)
        when the file is not a readable checkpoint."""
        if not self.exists(name):
            return None
        try:
            if self.fs is None:
                tree = plainstate.load(self.path(name))
            else:
                with self.fs.open_input_stream(self.path(name)) as f:
                    tree = plainstate.from_bytes(f.read())
        except Exception as e:  # zip/JSON/npy errors: all mean "corrupt"
            raise ValueError(f"checkpoint {self.path(name)} is corrupt or unreadable "
                             f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
                             ) from None
        if not isinstance(tree, dict) or tree.get("format") != CHECKPOINT_FORMAT:
            raise ValueError(f"{self.path(name)} is not an islands checkpoint")
        return tree

    def restore(self, name: str, set_state, whose: str) -> bool:
        """``set_state(tree)`` from the checkpoint ``name``; False when there is none.
        ValueError naming the file when it does not fit (``whose``: "island 3", ...)."""
        state = self.load(name)
        if state is None:
            return False
        try:
            set_state(state)
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"checkpoint {self.path(name)} does not fit {whose}: {e}"
                             ) from None
        return True
