"""Chats as people name them: labels, short ids, the Codeman join, and addressing a chat
by whatever a listing printed (coop_engine/naming.py)."""

from __future__ import annotations

import pytest

from coop_engine.errors import Ambiguous, NotFound
from coop_engine.naming import codeman, label, resolve, short_ids

# Codex thread ids are UUIDv7: made within a minute, their first 8 characters agree.
THREAD_A = "019adf3e-71c0-7d12-9a4b-1f2e3d4c5b6a"
THREAD_B = "019adf3e-8a44-7e01-8c3d-6b5a49382716"
CLAUDE = "abcd1111-2222-4333-8444-555555555555"
CLAUDE_TWIN = "abcd1111-9999-4333-8444-555555555555"


def chats() -> list[dict[str, object]]:
    return [
        {"vendor": "claude", "session_id": CLAUDE, "name": "reviewer-7", "host": "office"},
        {"vendor": "codex", "session_id": THREAD_A, "name": "importer", "host": "office"},
        {"vendor": "codex", "session_id": THREAD_B, "name": None, "host": "laptop"},
    ]


def test_a_label_is_the_name_else_the_folder_else_the_id() -> None:
    assert label("reviewer-7", "/work/api", CLAUDE) == "reviewer-7"
    assert label(None, "/work/api/", CLAUDE) == "api"
    assert label("", None, CLAUDE) == "abcd1111"
    assert label(7, ["/x"], None) == "-"  # whatever a registry holds, a label is text


def test_short_ids_are_eight_characters_where_those_differ() -> None:
    assert short_ids([CLAUDE, THREAD_A]) == {CLAUDE: "abcd1111", THREAD_A: "019adf3e"}


def test_short_ids_grow_past_a_shared_start_and_never_end_at_a_hyphen() -> None:
    shorts = short_ids([THREAD_A, THREAD_B, CLAUDE, CLAUDE_TWIN])
    assert shorts[THREAD_A] == "019adf3e-7"
    assert shorts[THREAD_B] == "019adf3e-8"
    assert shorts[CLAUDE] == "abcd1111-2"
    assert all(not short.endswith("-") for short in shorts.values())
    assert len(set(shorts.values())) == 4


def test_every_short_id_printed_is_accepted_back() -> None:
    rows = chats()
    shorts = short_ids(str(row["session_id"]) for row in rows)
    for row in rows:
        assert resolve(shorts[str(row["session_id"])], rows) is row


@pytest.mark.parametrize(
    "text", [CLAUDE, "claude:" + CLAUDE, "abcd1111", "ABCD", "claude:abcd", "reviewer-7"]
)
def test_a_chat_is_named_by_id_prefix_or_name(text: str) -> None:
    assert resolve(text, chats())["session_id"] == CLAUDE


def test_a_prefix_two_chats_share_is_refused_naming_both() -> None:
    with pytest.raises(Ambiguous) as refused:
        resolve("019adf3e", chats())
    line = str(refused.value)
    assert "019adf3e-7" in line and "019adf3e-8" in line
    assert "importer on office" in line and "laptop" in line
    assert "\n" not in line


def test_a_vendor_narrows_the_search() -> None:
    rows = [*chats(), {"vendor": "claude", "session_id": THREAD_A, "name": None, "host": "x"}]
    assert resolve("codex:019adf3e-7", rows)["vendor"] == "codex"


def test_the_same_chat_on_two_macs_asks_for_the_host() -> None:
    rows = [*chats(), {**chats()[0], "host": "laptop"}]
    with pytest.raises(Ambiguous, match="pass --host"):
        resolve("reviewer-7", rows)


def test_a_name_only_an_exited_chat_has_names_nothing() -> None:
    rows = [{**chats()[0], "live": False}]
    with pytest.raises(NotFound):
        resolve("reviewer-7", rows)


def test_too_short_or_unknown_is_not_found_in_one_line() -> None:
    with pytest.raises(NotFound, match="at least 4"):
        resolve("abc", chats())
    with pytest.raises(NotFound) as refused:
        resolve("f" * 50_000, chats())
    assert len(str(refused.value)) < 200


def test_codeman_panes_join_their_session_and_foreign_workers_are_told_apart() -> None:
    assert codeman("codeman-cfb1b544:@96.%96") == {
        "id8": "cfb1b544",
        "kind": "local",
        "session": "codeman-cfb1b544",
        "registry": "this",
    }
    assert codeman("codeman-dkr-cfb1b544:@1.%1")["kind"] == "docker"  # type: ignore[index]
    assert codeman("codeman-ssh-cfb1b544:@1.%1")["registry"] == "another"  # type: ignore[index]
    assert codeman("work:@1.%2") is None
    assert codeman(None) is None  # entries older than 2.1.226 carry no tmux
    assert codeman(42) is None
    assert codeman("codeman-cfb1b544x:@1.%1") is None
