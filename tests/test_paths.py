"""Path mappings between a client's paths and the host's."""

from __future__ import annotations

import pytest

from oplens.lsp.paths import PathMap


def test_maps_both_ways_longest_prefix_first() -> None:
    m = PathMap.parse([
        {"local": "/Users/me/proj", "host": "/home/ubuntu/proj"},
        {"local": "/Users/me/proj/vendor", "host": "/opt/vendor"},
    ])
    assert m.to_host("/Users/me/proj/a/b.py") == "/home/ubuntu/proj/a/b.py"
    assert m.to_host("/Users/me/proj/vendor/x.py") == "/opt/vendor/x.py"
    assert m.to_host("/Users/me/project2/x.py") == "/Users/me/project2/x.py"  # a prefix of the name is not a folder
    assert m.to_local("/home/ubuntu/proj/a/b.py") == "/Users/me/proj/a/b.py"
    assert m.host_path_to_uri("/home/ubuntu/proj/m.py") == "file:///Users/me/proj/m.py"
    assert m.uri_to_host_path("file:///Users/me/proj/m.py") == "/home/ubuntu/proj/m.py"


@pytest.mark.parametrize("raw", [{"local": "/a"}, [{"local": "/a"}], [{"local": 1, "host": "/b"}], ["x"]])
def test_bad_mappings_name_the_entry(raw: object) -> None:
    with pytest.raises(ValueError, match="pathMappings"):
        PathMap.parse(raw)


def test_no_mapping_is_identity() -> None:
    m = PathMap.parse(None)
    assert m.to_host("/x/y.py") == "/x/y.py" and m.to_local("/x/y.py") == "/x/y.py"
