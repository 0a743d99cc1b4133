"""Reading the files a user hands healthd: which line a byte that is not UTF-8 is on."""

from __future__ import annotations

import pytest

from healthd._files import undecodable_line


@pytest.mark.parametrize("bound", [1, 2, 3, 4, 5, 7, 1 << 20])
@pytest.mark.parametrize("ending", [b"\r", b"\n", b"\r\n"])
def test_the_line_of_a_bad_byte_does_not_depend_on_where_a_read_cut_the_file(
    tmp_path, bound, ending
):
    # a euro sign (three bytes) the read bound may cut in two, then a byte no UTF-8 holds,
    # on the second line; lines end as an old Mac, Unix or Windows editor ends them
    path = tmp_path / "probes.jsonl"
    path.write_bytes(b"{}" + ending + b"ab\xe2\x82\xac\xff" + ending + b"line3" + ending)
    assert undecodable_line(str(path), bound) == (2, "invalid start byte")


def test_a_file_whose_every_byte_is_text_has_no_such_line(tmp_path):
    path = tmp_path / "ok.jsonl"
    path.write_bytes("caf\u00e9 \u20ac\r\n".encode() * 3)
    assert undecodable_line(str(path), 2) is None
