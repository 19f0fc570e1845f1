"""Properties of the transcript reader (hosts/mac/transcripts.py), for any bytes at all.

A transcript is a byte stream that grows by appends of any size, split anywhere (mid
line, mid UTF-8 character). Read forward from the offset each read returns, it yields
exactly the stream's complete lines, each at its own byte offset; a torn tail never
yields a line until its newline arrives. The search and the tail agree with it."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from hosts.mac import transcripts

# Bytes rich in newlines, NULs, bytes that are not UTF-8, and the needle's letters.
BYTE = st.sampled_from([b"\n", b"\x00", b"\xff", b"\xc3", b"a", b"b", b"{", b" ", b"\r"])
STREAM = st.lists(BYTE, max_size=300).map(b"".join)
SETTINGS = settings(max_examples=300, deadline=None)


def complete_lines(data: bytes) -> list[tuple[int, bytes]]:
    """The reference: every non-empty line that has its newline, at its offset."""
    lines, start = [], 0
    while (newline := data.find(b"\n", start)) >= 0:
        if newline > start:
            lines.append((start, data[start:newline]))
        start = newline + 1
    return lines


def boundary(data: bytes) -> int:
    return data.rfind(b"\n") + 1


@contextmanager
def transcript() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"
        path.touch()
        yield path


def pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(data)) for cut in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False)]


@SETTINGS
@given(STREAM, st.lists(st.integers(0, 300), max_size=12))
def test_reading_forward_after_each_append_yields_every_complete_line_once(
    data: bytes, cuts: list[int]
) -> None:
    with transcript() as path:
        offset, seen = 0, []
        for piece in pieces(data, cuts):
            with open(path, "ab") as out:
                out.write(piece)
            chunk = transcripts.read_lines(path, offset)
            assert chunk.start == offset and not chunk.rotated
            seen += chunk.lines
            written = path.read_bytes()
            assert chunk.end == boundary(written), "the next read starts after the last newline"
            offset = chunk.end
        assert seen == complete_lines(data)


@SETTINGS
@given(STREAM, st.integers(1, 40))
def test_a_small_budget_returns_only_true_lines_and_always_moves_on(
    data: bytes, budget: int
) -> None:
    with transcript() as path:
        path.write_bytes(data)
        truth = dict(complete_lines(data))
        offset = 0
        for _ in range(len(data) + 2):
            chunk = transcripts.read_lines(path, offset, max_bytes=budget)
            for at, line in chunk.lines:
                assert truth.get(at) == line
            assert chunk.end == 0 or data[chunk.end - 1 : chunk.end] == b"\n"
            if chunk.end == offset:
                break
            assert chunk.end > offset
            offset = chunk.end
        assert b"\n" not in data[offset:], "a complete line was never passed"


@SETTINGS
@given(
    STREAM,
    st.lists(st.integers(0, 300), max_size=8),
    st.lists(st.sampled_from([b"a", b"ab", b"\x00", b"\xff\xc3", b"{ "]), min_size=1, max_size=3),
    st.integers(1, 16),
)
def test_the_search_finds_exactly_the_complete_lines_holding_a_needle(
    data: bytes, cuts: list[int], needles: list[bytes], buffer: int
) -> None:
    """With a buffer far smaller than a line, as with a 50 MB line against 4 MB."""
    patch = pytest.MonkeyPatch()
    patch.setattr(transcripts, "CHUNK", buffer)
    try:
        with transcript() as path:
            offset, seen = 0, []
            for piece in pieces(data, cuts):
                with open(path, "ab") as out:
                    out.write(piece)
                chunk = transcripts.scan_for(path, offset, needles)
                seen += chunk.lines
                assert chunk.end == boundary(path.read_bytes())
                offset = chunk.end
            expected = [
                (at, line) for at, line in complete_lines(data) if any(n in line for n in needles)
            ]
            assert seen == expected
    finally:
        patch.undo()


@SETTINGS
@given(STREAM, st.integers(0, 320))
def test_the_tail_is_the_last_complete_lines_whole(data: bytes, budget: int) -> None:
    with transcript() as path:
        path.write_bytes(data)
        chunk = transcripts.tail(path, budget)
        truth = complete_lines(data)
        assert chunk.lines == truth[len(truth) - len(chunk.lines) :]
        for at, _ in chunk.lines:
            assert at >= len(data) - budget - 1 and data[at - 1 : at] in (b"", b"\n")


@SETTINGS
@given(STREAM, STREAM)
def test_a_shorter_file_or_another_file_under_the_name_is_read_again_from_zero(
    before: bytes, after: bytes
) -> None:
    with transcript() as path:
        path.write_bytes(before)
        first = transcripts.read_lines(path, 0)
        replacement = path.with_suffix(".new")
        replacement.write_bytes(after)
        os.replace(replacement, path)
        again = transcripts.read_lines(path, first.end, inode=first.inode)
        assert again.rotated and again.start == 0
        assert again.lines == complete_lines(after)


def passed_over(line: bytes) -> bytes | None:
    """A `take` that passes some lines holding the needle over, as a sidechain's entry
    recording a mode is."""
    return None if line.endswith(b"b") else line


# Longer lines than STREAM's, so that lines cross the edges of small windows.
LONG_LINES = st.lists(
    st.sampled_from([b"\n", b"a", b"b", b"{", b"\xff", b"xyzxyz", b"a{ab"]),
    min_size=10,
    max_size=120,
).map(b"".join)


@SETTINGS
@given(
    LONG_LINES,
    st.integers(0, 400),
    st.integers(1, 24),
    st.sampled_from([b"a", b"a{", b"{\xffa"]),
    st.booleans(),
)
def test_the_newest_line_taken_is_the_newest_the_tail_holds(
    data: bytes, budget: int, first: int, needle: bytes, reused: bool
) -> None:
    # Read backwards in windows from `first` bytes; a line crossing a window's edge, a
    # torn last line and a line older than the budget are the tail's own answers. A
    # reused buffer holds an earlier read's bytes (here lines holding the needle), which
    # are never read as this file's.
    buffer = bytearray(needle + b"\n") * (budget + 1) if reused else None
    with transcript() as path:
        path.write_bytes(data)
        found = transcripts.newest_line(
            path, needle, budget, passed_over, buffer=buffer, first_bytes=first
        )
        taken = [line for _, line in transcripts.tail(path, budget).lines if needle in line]
        taken = [line for line in taken if passed_over(line) is not None]
        # The answer is the whole file's when a line was taken or the tail is the file.
        assert found == (taken[-1] if taken else None, bool(taken) or len(data) <= budget + 1)


@pytest.mark.parametrize("reader", ["tail", "newest_line"])
@pytest.mark.parametrize("kind", ["fifo", "folder", "nothing"])
def test_no_regular_file_is_no_transcript_and_nothing_waits(
    tmp_path: Path, reader: str, kind: str
) -> None:
    path = tmp_path / "t.jsonl"
    if kind == "fifo":
        os.mkfifo(path)  # no writer: opened without O_NONBLOCK, the open would wait
    elif kind == "folder":
        path.mkdir()

    def read() -> object:
        if reader == "tail":
            chunk = transcripts.tail(path, 1024)
            return (chunk.lines, chunk.inode)
        return transcripts.newest_line(path, b"a", 1024, passed_over)

    answers: list[object] = []
    reading = threading.Thread(target=lambda: answers.append(read()), daemon=True)
    reading.start()
    reading.join(timeout=10)  # a deadline for a hang, not a speed bound
    if reading.is_alive():
        with open(path, "wb"):  # a writer's open lets the stuck open go
            pass
        pytest.fail(f"{reader} waited on a FIFO named like a transcript")
    assert answers == [([], None) if reader == "tail" else None]
