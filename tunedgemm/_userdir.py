"""tunedgemm's per-user cache directory: measured crossovers and compiled kernels live there."""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path


def base() -> Path:
    """platformdirs' user cache directory for tunedgemm where platformdirs is installed, else
    $XDG_CACHE_HOME/tunedgemm, else ~/.cache/tunedgemm (not created here)."""
    try:
        import platformdirs
    except ImportError:
        root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(root) / "tunedgemm"
    return Path(platformdirs.user_cache_dir("tunedgemm", appauthor=False))


def untrusted_reason(path: Path, uid: int | None = None) -> str | None:
    """Why a cache directory or file must not be used (None: it may): it is not the current
    user's own, or others may write to it (so anyone could have planted its contents)."""
    uid = os.getuid() if uid is None and hasattr(os, "getuid") else uid
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return f"{path} is a symbolic link"
    if uid is not None and info.st_uid != uid:
        return f"{path} belongs to user {info.st_uid}, not to this user ({uid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"others may write to {path} (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def private_dir(path: Path) -> Path | None:
    """path, created (with its parents) for this user alone (mode 0700) where missing; None,
    with a warning, where it exists but is not to be trusted (see untrusted_reason) or cannot
    be made."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        reason = untrusted_reason(path)
    except OSError as exc:
        reason = f"cannot create {path}: {exc}"
    if reason is not None:
        warnings.warn(f"tunedgemm: not using the cache directory: {reason}", RuntimeWarning,
                      stacklevel=3)  # fmt: skip
        return None
    return path
