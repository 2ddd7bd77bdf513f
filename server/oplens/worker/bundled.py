"""The editor extension's bundled libraries after the environment's, in the worker (no torch).

The extension starts the language server with its bundled pure-Python libraries (`bundled/libs`:
OpLens, pygls, attrs, rich, ...) first on PYTHONPATH, and names that folder in `OPLENS_BUNDLED_LIBS`;
the worker inherits both. The worker runs the user's code, whose imports must find what the
environment has, as the program alone would (its attrs, its typing_extensions, torch's own), not the
extension's copies. So once `oplens` itself is imported from the bundle, the worker moves that folder
to the end of `sys.path`: OpLens's modules keep coming from the bundle (through the package's
`__path__`, so the server and its worker are one version), everything else from the environment first,
and a package only the bundle has still imports. Processes the user's code starts inherit PYTHONPATH
as it is (one of them may unpickle OpLens's objects).
"""

from __future__ import annotations

import os
import sys

BUNDLED_LIBS_ENV = "OPLENS_BUNDLED_LIBS"


def environment_first() -> None:
    """Move the bundled libraries' folder (`OPLENS_BUNDLED_LIBS`) to the end of `sys.path`, if it is on it."""
    libs = os.environ.get(BUNDLED_LIBS_ENV, "")
    if not libs:
        return
    key = os.path.normcase(os.path.abspath(libs))
    found = [p for p in sys.path if p and os.path.normcase(os.path.abspath(p)) == key]
    for p in found:
        sys.path.remove(p)
    if found:
        sys.path.append(found[0])
