"""Path mappings between a client's paths and the host's (the `pathMappings` setting)."""

from __future__ import annotations

import pytest

from oplens.lsp import settings
from oplens.lsp.paths import Mapping, PathMap


def mappings(raw: object) -> PathMap:
    parsed, warnings = settings.parse({"pathMappings": raw})
    assert warnings == []
    return PathMap(parsed.path_mappings)


def test_maps_both_ways_longest_prefix_first() -> None:
    m = mappings([
        {"local": "/Users/me/proj", "host": "/home/ubuntu/proj"},
        {"local": "/Users/me/proj/vendor", "host": "/opt/vendor"},
    ])
    assert m.to_host("/Users/me/proj/a/b.py") == "/home/ubuntu/proj/a/b.py"
    assert m.to_host("/Users/me/proj/vendor/x.py") == "/opt/vendor/x.py"
    assert m.to_host("/Users/me/project2/x.py") == "/Users/me/project2/x.py"  # a prefix of the name is not a folder
    assert m.to_local("/home/ubuntu/proj/a/b.py") == "/Users/me/proj/a/b.py"
    assert m.host_path_to_uri("/home/ubuntu/proj/m.py") == "file:///Users/me/proj/m.py"
    assert m.uri_to_host_path("file:///Users/me/proj/m.py") == "/home/ubuntu/proj/m.py"


def test_trailing_slashes_do_not_matter() -> None:
    m = PathMap([Mapping("/Users/me/proj/", "/home/ubuntu/proj/")])
    assert m.to_host("/Users/me/proj/a.py") == "/home/ubuntu/proj/a.py"
    assert m.to_local("/home/ubuntu/proj") == "/Users/me/proj"


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ({"local": "/a"}, "pathMappings = {'local': '/a'} is not valid: give"),
        ([{"local": "/a"}], "pathMappings[0].host is missing"),
        ([{"local": 1, "host": "/b"}], "pathMappings[0].local must be a string"),
        (["x"], "pathMappings[0] must be an object"),
    ],
)
def test_bad_mappings_name_the_entry_and_are_ignored(raw: object, where: str) -> None:
    parsed, warnings = settings.parse({"pathMappings": raw, "hintThreshold": 5})
    (warning,) = warnings
    assert warning.startswith("OpLens: setting pathMappings = ") and "give a list of {local, host} objects" in warning
    assert where in warning and warning.endswith("Using the default, none.")
    assert parsed.path_mappings == [] and parsed.hint_threshold == 5  # the rest is kept


def test_no_mapping_is_identity() -> None:
    m = PathMap()
    assert m.to_host("/x/y.py") == "/x/y.py" and m.to_local("/x/y.py") == "/x/y.py"


def test_a_uri_that_is_not_a_file_is_refused() -> None:
    with pytest.raises(ValueError, match="not a file URI"):
        PathMap().uri_to_host_path("untitled:Untitled-1")
