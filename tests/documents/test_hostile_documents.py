"""Regression tests for hostile documents (issue 14): each one failed before its fix.

The broad sweep (every hostile file through every reader) is in test_hostile_files.py; these pin
one defect each, with the message the user gets.
"""

from __future__ import annotations

import pytest

from mtserve.documents import DocumentError, read_document
from tests.documents import samples


# --- .po uploads never name a file on the server ---------------------------------------------------
def test_a_po_upload_that_names_a_server_file_is_parsed_as_text(tmp_path):
    catalog = tmp_path / "secret.po"
    catalog.write_text(samples.PO, encoding="utf-8")
    assert read_document("real.po", samples.PO.encode()).segments  # the catalog itself is valid
    with pytest.raises(DocumentError) as existing:
        read_document("a.po", str(catalog).encode())  # before: the server's file was read and parsed
    with pytest.raises(DocumentError) as missing:
        read_document("a.po", str(tmp_path / "nothing-here.po").encode())
    # No existence oracle: a path that exists and one that does not get the same answer.
    assert str(existing.value) == str(missing.value) == \
        "could not read the .po file: Syntax error in po file (line 1)"
    assert str(tmp_path) not in str(existing.value)


def test_etc_passwd_as_a_po_upload_is_a_syntax_error_without_the_path():
    with pytest.raises(DocumentError) as caught:
        read_document("a.po", b"/etc/passwd")
    assert "/etc/passwd" not in str(caught.value)
