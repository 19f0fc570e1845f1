"""The oracle's checker counts what it must: hand-made receivers' records (transcripts,
logs, inbox logs and rollouts written here line by line) against hand-made verdicts, one
wrong verdict at a time. A checker that cannot fail is worthless."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from .checker import ClaudeReceiver, CodexReceiver, Receiver, check, main, receiver_to_json

CHECKER = Path(__file__).with_name("checker.py")
NONCE = "n0nce42"


class Chat:
    """A hand-made Claude chat's files: transcripts, its notes, its inbox's log."""

    def __init__(self, root: Path, name: str = "chat", host: str = "office") -> None:
        self.session_id = str(uuid.uuid4())
        self.config_dir = root / name / "claude"
        self.receiver = ClaudeReceiver(
            name,
            host,
            self.session_id,
            self.config_dir,
            root / name / "frames.log",
            root / name / "frames.err",
        )
        self.receiver.frame_log.parent.mkdir(parents=True)
        self.receiver.frame_log.touch()
        self.receiver.notes.touch()

    def _append(self, path: Path, line: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as out:
            out.write(line + "\n")

    def transcript(self, session_id: str | None = None) -> Path:
        name = f"{session_id or self.session_id}.jsonl"
        return self.config_dir / "projects" / "-work-project" / name

    def enter(
        self, msg_id: str, text: str = "hello", session_id: str | None = None, **origin: Any
    ) -> None:
        """A peer entry starting a turn (shape 1), its origin Coop's unless overridden."""
        entry = {
            "type": "user",
            "isMeta": True,
            "message": {"role": "user", "content": f"Another Claude session sent:\n{text}"},
            "origin": {"kind": "peer", "from": "cwkCoop", "msg_id": msg_id, **origin},
            "sessionId": session_id or self.session_id,
        }
        self._append(self.transcript(session_id), json.dumps(entry))

    def absorb(self, msg_id: str, text: str = "hello") -> None:
        """A peer message absorbed mid-turn (shape 2): the queued_command attachment."""
        origin = {"kind": "peer", "from": "cwkCoop", "msg_id": msg_id, "verifiedPeerPid": 7}
        attachment = {
            "type": "queued_command",
            "prompt": text,
            "source_uuid": str(uuid.uuid4()),
            "origin": origin,
            "isMeta": True,
        }
        self._append(
            self.transcript(), json.dumps({"type": "attachment", "attachment": attachment})
        )

    def note(self, line: str) -> None:
        self._append(self.receiver.notes, f"hosts.sim[4242]: {line}")

    def read(self, msg_id: str) -> None:
        """The inbox read a frame with this id."""
        frame = {"type": "user", "msg_id": msg_id, "uuid": msg_id, "from": "cwkCoop"}
        self._append(self.receiver.frame_log, json.dumps(frame))


def row(chat: Chat | Thread, state: str, kind: str = "invitation", **facts: str) -> dict[str, Any]:
    """An envelope as `coop outbox --json` prints it (the fields the checker reads)."""
    door = "claude" if isinstance(chat, Chat) else "codex"
    native = chat.session_id if isinstance(chat, Chat) else chat.thread_id
    every = {"stored": "2026-01-01T00:00:00Z", "transport": None, "received": None}
    return {
        "id": str(uuid.uuid4()),
        "kind": kind,
        "session": f"{door}:{native}",
        "host": chat.receiver.host,
        "state": state,
        "facts": {**every, **facts},
        "reason": None,
    }


RECEIVED = {"transport": "2026-01-01T00:00:01Z", "received": "2026-01-01T00:00:02Z"}


def test_true_verdicts_count_nothing(tmp_path: Path) -> None:
    chat, busy = Chat(tmp_path, "idle"), Chat(tmp_path, "busy")
    delivered, absorbed = row(chat, "delivered", **RECEIVED), row(busy, "delivered", **RECEIVED)
    refused, lost = row(chat, "expired"), row(chat, "expired")
    held, watched = row(chat, "expired"), row(chat, "uncertain")
    chat.enter(delivered["id"], f"To take it, end your reply with: COOP_ACCEPT {NONCE}")
    busy.absorb(absorbed["id"])
    chat.note(f"frame {refused['id']}: refuse (settings-flag)")
    chat.note(f"frame {lost['id']}: lost (--lose-frames)")
    chat.note(f"frame {held['id']}: hold (permission-mode-parity)")
    chat.note(f"frame {held['id']}: held frame expired and was dropped")
    chat.note(f"frame {watched['id']}: hold (permission-mode-parity)")
    for envelope in (delivered, refused, lost, held, watched):
        chat.read(envelope["id"])
    rows = [delivered, absorbed, refused, lost, held, watched]
    report = check(rows, [chat.receiver, busy.receiver])
    assert report.line() == (
        "ORACLE invitations=6 receivers=2 false_receipts=0 false_losses=0 duplicates=0"
        " holds_expired=0 unknowns_expired=0"
    )
    assert report.clean, report.detail()
    assert report.settled == {"refused": 1, "lost": 1, "hold-expired": 1}


def test_a_receipt_the_transcript_does_not_hold_is_a_false_receipt(tmp_path: Path) -> None:
    chat = Chat(tmp_path)
    delivered, claimed = row(chat, "delivered", **RECEIVED), row(chat, "uncertain", **RECEIVED)
    chat.enter(delivered["id"])
    chat.read(claimed["id"])  # read by the inbox, never entered: not a receipt
    report = check([delivered, claimed], [chat.receiver])
    assert report.false_receipts == [claimed["id"]] and not report.clean


def test_an_entry_without_coops_provenance_is_no_receipt(tmp_path: Path) -> None:
    chat = Chat(tmp_path)
    spoofed, not_meta = row(chat, "delivered", **RECEIVED), row(chat, "delivered", **RECEIVED)
    chat.enter(spoofed["id"], **{"from": "mallory"})
    entry = {
        "type": "user",
        "message": {"role": "user", "content": "hi"},
        "origin": {"kind": "peer", "from": "cwkCoop", "msg_id": not_meta["id"]},
    }
    chat._append(chat.transcript(), json.dumps(entry))
    report = check([spoofed, not_meta], [chat.receiver])
    assert report.false_receipts == [spoofed["id"], not_meta["id"]]


def test_an_entry_in_another_chat_is_no_receipt_for_the_chat_addressed(tmp_path: Path) -> None:
    addressed, other = Chat(tmp_path, "addressed"), Chat(tmp_path, "other")
    envelope = row(addressed, "delivered", **RECEIVED)
    other.enter(envelope["id"])
    report = check([envelope], [addressed.receiver, other.receiver])
    assert report.false_receipts == [envelope["id"]]


def test_an_expired_envelope_the_receiver_entered_is_a_false_loss(tmp_path: Path) -> None:
    chat = Chat(tmp_path)
    expired, pending, cancelled = row(chat, "expired"), row(chat, "pending"), row(chat, "cancelled")
    for envelope in (expired, pending, cancelled):
        chat.enter(envelope["id"])
    chat.note(f"frame {expired['id']}: lost (--lose-frames)")  # its words say lost, yet it is there
    report = check([expired, pending, cancelled], [chat.receiver])
    assert report.false_losses == [expired["id"], pending["id"], cancelled["id"]]
    assert report.unknowns_expired == [] and report.holds_expired == []


def test_one_envelope_entered_twice_or_read_twice_is_a_duplicate(tmp_path: Path) -> None:
    chat = Chat(tmp_path)
    twice, read_twice, once = (row(chat, "delivered", **RECEIVED) for _ in range(3))
    chat.enter(twice["id"])
    chat.absorb(twice["id"])
    chat.enter(read_twice["id"])
    chat.read(read_twice["id"])
    chat.read(read_twice["id"])
    chat.enter(once["id"])
    chat.read(once["id"])
    report = check([twice, read_twice, once], [chat.receiver])
    assert report.duplicates == [twice["id"], read_twice["id"]]


def test_one_invitation_or_one_todos_work_entered_under_two_ids_is_a_duplicate(
    tmp_path: Path,
) -> None:
    chat = Chat(tmp_path)
    first, again = row(chat, "delivered", **RECEIVED), row(chat, "delivered", **RECEIVED)
    work, more = (row(chat, "delivered", "work", **RECEIVED) for _ in range(2))
    asks = f"Coop invites you to todo #3\nTo take it, end your reply with: COOP_ACCEPT {NONCE}"
    chat.enter(first["id"], asks)
    chat.enter(again["id"], f"Second attempt: ...\n{asks}")
    report_work = 'coop todo report 3 --outcome "<what happened>" --by worker'
    chat.enter(work["id"], f"Todo #3: x\n{report_work}")
    chat.absorb(more["id"], f"Todo #3: x\n{report_work}")
    report = check([first, again, work, more], [chat.receiver])
    pair = ", ".join(sorted([first["id"], again["id"]]))
    works = ", ".join(sorted([work["id"], more["id"]]))
    assert report.duplicates == [f"invitation {NONCE} ({pair})", f"work of todo #3 ({works})"]


def test_an_expired_hold_without_the_receivers_words_is_counted(tmp_path: Path) -> None:
    chat = Chat(tmp_path)
    held, ended = row(chat, "expired"), row(chat, "expired")
    for envelope in (held, ended):
        chat.read(envelope["id"])
        chat.note(f"frame {envelope['id']}: hold (permission-mode-parity)")
    chat.note(f"frame {ended['id']}: held frame expired and was dropped")
    report = check([held, ended], [chat.receiver])
    assert report.holds_expired == [held["id"]] and report.unknowns_expired == []


def test_an_expiry_the_receivers_records_do_not_settle_is_an_unknown_expired(
    tmp_path: Path,
) -> None:
    chat = Chat(tmp_path)
    silent, admitted, released = row(chat, "expired"), row(chat, "expired"), row(chat, "expired")
    chat.read(admitted["id"])
    chat.note(f"frame {admitted['id']}: accept (permission-mode-parity)")
    chat.note(f"frame {released['id']}: released (approved)")
    report = check([silent, admitted, released], [chat.receiver])
    assert report.unknowns_expired == [silent["id"], admitted["id"], released["id"]]


def test_a_chat_cleared_mid_delivery_is_read_in_every_conversation_it_had(tmp_path: Path) -> None:
    chat = Chat(tmp_path)
    new = str(uuid.uuid4())
    chat.note(f"cleared: conversation {chat.session_id} is now {new}")
    before, after = row(chat, "delivered", **RECEIVED), row(chat, "delivered", **RECEIVED)
    after["session"] = f"claude:{new}"  # Coop names the chat by its current conversation
    chat.enter(before["id"])
    chat.enter(after["id"], session_id=new)
    assert check([before, after], [chat.receiver]).clean
    forgotten = Chat(tmp_path, "forgotten")  # the same files, without the log's chain
    forgotten.enter(after["id"], session_id=new)
    after["session"] = f"claude:{forgotten.session_id}"
    assert check([after], [forgotten.receiver]).false_receipts == [after["id"]]


class Thread:
    """A hand-made Codex thread: one rollout under sessions/."""

    def __init__(self, root: Path, host: str = "office") -> None:
        self.thread_id = str(uuid.uuid4())
        self.receiver = CodexReceiver("thread", host, self.thread_id, root / "codex")
        day = self.receiver.codex_home / "sessions" / "2026" / "01" / "01"
        day.mkdir(parents=True)
        self.rollout = day / f"rollout-2026-01-01T00-00-00-{self.thread_id}.jsonl"
        self.rollout.write_text(json.dumps({"type": "session_meta", "payload": {}}) + "\n")

    def enter(self, client_id: str, text: str = "hello") -> None:
        item = {"type": "UserMessage", "client_id": client_id, "content": [{"text": text}]}
        line = {"type": "event_msg", "payload": {"type": "item_completed", "item": item}}
        with self.rollout.open("a") as out:
            out.write(json.dumps(line) + "\n")


def test_a_codex_thread_is_judged_by_its_rollout(tmp_path: Path) -> None:
    thread = Thread(tmp_path)
    delivered, claimed = row(thread, "delivered", **RECEIVED), row(thread, "delivered", **RECEIVED)
    withdrawn, entered = row(thread, "expired"), row(thread, "expired")
    thread.enter(delivered["id"])
    thread.enter(entered["id"])
    report = check([delivered, claimed, withdrawn, entered], [thread.receiver])
    assert report.false_receipts == [claimed["id"]]
    assert report.false_losses == [entered["id"]]
    assert report.unknowns_expired == [withdrawn["id"]]  # nothing of Codex's says lost


def test_an_envelope_for_no_receiver_of_the_manifest_is_not_clean(tmp_path: Path) -> None:
    chat, elsewhere = Chat(tmp_path), Chat(tmp_path, "elsewhere", host="laptop")
    envelope = row(elsewhere, "uncertain")
    report = check([envelope], [chat.receiver])
    assert report.unaddressed == [envelope["id"]] and not report.clean


def test_the_script_reads_a_manifest_and_an_outbox_and_fails_on_a_count(
    tmp_path: Path, capsys: Any
) -> None:
    chat = Chat(tmp_path)
    claimed = row(chat, "delivered", **RECEIVED)
    receivers: list[Receiver] = [chat.receiver]
    manifest, outbox = tmp_path / "manifest.json", tmp_path / "outbox.json"
    manifest.write_text(json.dumps({"receivers": [receiver_to_json(r) for r in receivers]}))
    outbox.write_text(json.dumps([claimed]))
    assert main(["--manifest", str(manifest), "--outbox", str(outbox)]) == 1
    assert "false_receipts=1 " in capsys.readouterr().out
    chat.enter(claimed["id"])
    assert main(["--manifest", str(manifest), "--outbox", str(outbox)]) == 0


def test_the_checker_imports_nothing_of_coop() -> None:
    """Run as a script in a fresh interpreter, it loads no module of Coop's."""
    probe = (
        "import runpy, sys; sys.argv = ['checker', '--help']\n"
        "try:\n"
        f"    runpy.run_path({str(CHECKER)!r}, run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('coop_engine', 'coop_tui', 'hosts')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd="/"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
