"""Whitespace between sentences, as the target language writes it."""

from __future__ import annotations

from mtserve.text.segment import Piece, glued

UNSPACED_SCRIPTS = ("zh", "zt", "ja")


def respace_for_target(pieces: list[Piece], target: str) -> list[Piece]:
    """Adjust the gaps between sentences to the target script.

    Chinese and Japanese sentences follow each other with no space; English
    ones need one. Newlines and other whitespace runs are kept exactly; only
    an empty gap or a single space between two sentences is changed. Pieces
    of one overlong word, cut mid-word, stay glued together.
    """
    unspaced = target in UNSPACED_SCRIPTS
    out: list[Piece] = []
    for i, piece in enumerate(pieces):
        prev = out[-1] if out else None
        between_sentences = piece.translate and prev is not None and prev.translate
        if between_sentences and not unspaced and not glued(prev.text, piece.text):
            out.append(Piece(" ", False))
        elif (
            unspaced and not piece.translate and piece.text == " " and prev is not None
            and prev.translate and i + 1 < len(pieces) and pieces[i + 1].translate
        ):
            continue
        out.append(piece)
    return out
