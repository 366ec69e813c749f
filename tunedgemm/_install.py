"""Which tunedgemm runs: the installed distribution, or a source tree that shadows it.

`python -m ...` run inside a checkout imports the checkout's `tunedgemm/` before the
installed copy. The two may differ: the C extension, say, is built in the installed copy
(`pip install .`) and not in the tree. `info` and `doctor` say which case this is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

DISTRIBUTION = "tunedgemm"


@dataclass(frozen=True)
class Install:
    imported: Path  # the package directory this process imported
    installed: Path | None  # the installed distribution's package directory (None: not installed)
    editable: bool

    @property
    def shadowed(self) -> bool:
        """The imported package is a source tree standing in front of another installed one."""
        return self.installed is not None and self.installed != self.imported

    def describe(self) -> str:
        if self.installed is None:
            return f"{self.imported} (tunedgemm is not installed: a source tree on sys.path)"
        if self.shadowed:
            how = "the editable install at" if self.editable else "the tunedgemm installed at"
            return (f"{self.imported}, a source tree that shadows {how} {self.installed} "
                    "(run from another directory to use that one)")  # fmt: skip
        return f"{self.imported} ({'editable install' if self.editable else 'installed'})"


def find(imported: Path | None = None) -> Install:
    """Where the running tunedgemm comes from, and where the installed distribution lies."""
    if imported is None:
        imported = Path(__file__).resolve().parent
    dist = _installed_distribution()
    if dist is None:
        return Install(imported, None, False)
    editable, project = _editable_project(dist)
    if editable and project is not None:
        return Install(imported, (project / "tunedgemm").resolve(), True)
    init = dist.locate_file("tunedgemm/__init__.py")
    return Install(imported, Path(str(init)).resolve().parent, False)


def _installed_distribution() -> metadata.Distribution | None:
    """The distribution an installer put in place. A build leaves a tunedgemm.egg-info in the
    source tree, which importlib.metadata finds first when the tree is on sys.path: it has
    no INSTALLER record, and says nothing of where tunedgemm is installed."""
    found = list(metadata.distributions(name=DISTRIBUTION))
    installed = [d for d in found if d.read_text("INSTALLER") is not None]
    return installed[0] if installed else None


def _editable_project(dist: metadata.Distribution) -> tuple[bool, Path | None]:
    """(editable, project directory) from the install's direct_url.json (PEP 610)."""
    text = dist.read_text("direct_url.json")
    if not text:
        return False, None
    try:
        record = json.loads(text)
    except ValueError:
        return False, None
    editable = bool(record.get("dir_info", {}).get("editable"))
    url = urlparse(record.get("url", ""))
    return editable, Path(unquote(url.path)) if url.scheme == "file" else None
