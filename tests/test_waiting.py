"""tests/waiting.py's reader of files rewritten in place: a torn read is read again, a
file gone is None."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from waiting import wait_until, whole_json


def test_an_entry_caught_between_its_truncate_and_its_write_is_read_again(
    tmp_path: Path,
) -> None:
    entry = tmp_path / "4242.json"
    entry.write_text("")  # truncated, not yet written
    read: list[object] = []
    reader = threading.Thread(target=lambda: read.append(whole_json(entry, "the entry")))
    reader.start()
    wait_until(lambda: reader.is_alive(), "the reader started")
    entry.write_text('{"pid":')  # torn: still not whole
    entry.write_text(json.dumps({"pid": 4242}))
    reader.join()
    assert read == [{"pid": 4242}]


def test_an_entry_gone_is_none(tmp_path: Path) -> None:
    assert whole_json(tmp_path / "gone.json", "the entry") is None
