"""A deterministic fleet and ledger for the app's tests, and ways to drive the app.

Nothing here starts a process. The Macs are LocalHosts over Claude config folders whose
registry entries and transcripts are written here with fixed ids; a `StillPlatform`
says which of those pids are alive, so the real registry, socket and policy code runs
without a live chat. The ledger is built through the real Engine with a fixed clock,
fixed envelope ids and fixed nonces. Paths are relative to the test's working folder,
so nothing the app shows names a temporary folder.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from clock import Clock
from textual.pilot import Pilot
from textual.screen import Screen

from coop_engine import invitations
from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.office import Office
from coop_engine.models import database
from coop_tui.app import CoopApp
from hosts.fleet import Fleet
from hosts.mac.host import Host
from hosts.mac.local import LocalHost
from hosts.mac.platforms import LinuxPlatform, Platform
from hosts.mac.transcripts import escape_cwd

ScreenType = TypeVar("ScreenType", bound=Screen[Any])
SIZE = (160, 48)
TOAST_BAR = "▌"  # each line of a toast begins with it
TOAST_SECONDS = 600.0  # how long a toast stays in the tests (Textual: 5 s)
HANG = 30.0  # seconds: bounds a wait for the app only (a loaded machine is slow)
# 2026-05-04 09:00:00 UTC: every time the app shows derives from this.
T0 = 1_777_885_200.0
BIRTH = "4242"
HOME = "/Users/dad"

# --- fixed ids, a fixed clock ------------------------------------------------------------


def id_sequence(seed: int) -> Callable[[], str]:
    """UUIDs that are the same on every run (and distinct in their first 8 characters)."""
    rng = random.Random(seed)
    return lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4))


@contextmanager
def fixed_nonces(seed: int = 7) -> Iterator[None]:
    """Invitation nonces (random in the engine) from a seeded sequence."""
    rng = random.Random(seed)
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
    original = invitations.new_nonce
    invitations.new_nonce = lambda: "".join(rng.choice(alphabet) for _ in range(10))
    try:
        yield
    finally:
        invitations.new_nonce = original


# --- Macs without live processes -----------------------------------------------------------


class StillPlatform(Platform):
    """Every pid whose registry entry says procStart BIRTH is alive; command lines are
    the ones given. The registry, socket and policy code above it is the real one."""

    name = "still"

    def __init__(self, argv: Mapping[int, list[str]] | None = None) -> None:
        self.argv = dict(argv or {})

    def births(self, pids: Iterable[int]) -> dict[int, str]:
        return {pid: BIRTH for pid in pids}

    def birth_matches(self, entry: Mapping[str, Any], birth: str) -> bool:
        return entry.get("procStart") == birth

    def cmdline(self, pid: int) -> list[str] | None:
        return self.argv.get(pid)

    def lock_held(self, path: str) -> bool:
        return LinuxPlatform().lock_held(path)  # Codex's writer locks are real files

    def parent(self, pid: int) -> int | None:
        return None


@dataclass
class ChatSpec:
    mac: str
    name: str
    pid: int
    status: str = "idle"
    mode: str = "auto"
    live: bool = True
    argv: list[str] = field(default_factory=lambda: ["claude"])
    transcript: list[dict[str, Any]] = field(default_factory=list)
    session_id: str = ""
    cwd_name: str = ""
    tmux: str | None = None  # the registry's tmux pane (Claude Code 2.1.226 and later)
    version: str = "2.1.328"

    @property
    def ref(self) -> str:
        return f"claude:{self.session_id}"

    @property
    def transcript_path(self) -> str:
        """Where the chat's transcript is on its Mac, as the evidence names it."""
        return f"~/.claude/projects/{escape_cwd(self.cwd)}/{self.session_id}.jsonl"

    @property
    def cwd(self) -> str:
        return f"{HOME}/src/{self.cwd_name or self.name}"


def _line(chat: ChatSpec, at: float, **entry: Any) -> dict[str, Any]:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(at))
    return {"sessionId": chat.session_id, "cwd": chat.cwd, "timestamp": stamp, **entry}


def human(chat: ChatSpec, at: float, text: str, uid: str) -> dict[str, Any]:
    return _line(
        chat,
        at,
        type="user",
        permissionMode=chat.mode,
        origin={"kind": "human"},
        message={"role": "user", "content": text},
        uuid=uid,
    )


def said(chat: ChatSpec, at: float, text: str, uid: str) -> dict[str, Any]:
    return _line(
        chat,
        at,
        type="assistant",
        message={"role": "assistant", "content": [{"type": "text", "text": text}]},
        uuid=uid,
    )


def turn_end(chat: ChatSpec, at: float, uid: str) -> dict[str, Any]:
    return _line(chat, at, type="system", subtype="turn_duration", durationMs=200, uuid=uid)


def peer(chat: ChatSpec, at: float, outbox_id: str, text: str) -> dict[str, Any]:
    body = (
        "Another Claude session sent a message:\n"
        f'<cross-session-message from="cwkCoop">\n{text}\n</cross-session-message>'
    )
    return _line(
        chat,
        at,
        type="user",
        isMeta=True,
        permissionMode=chat.mode,
        origin={"kind": "peer", "from": "cwkCoop", "msg_id": outbox_id},
        message={"role": "user", "content": body},
        uuid=outbox_id,
    )


def held(chat: ChatSpec, at: float, text: str, uid: str) -> dict[str, Any]:
    preview = " ".join(text.split())[:80] + "…"
    content = (
        "Held peer message — from cwkCoop · awaiting your approval: the sender did not say "
        f"it bypasses permissions «{preview}»"
    )
    return _line(
        chat, at, type="system", subtype="informational", level="warning", content=content, uuid=uid
    )


class MacFolder:
    """One Mac's Claude folder under the working folder: `<mac>/claude`."""

    def __init__(self, mac: str) -> None:
        self.mac = mac
        self.config_dir = Path(mac) / "claude"
        self.sockets = Path("sockets") / mac
        (self.config_dir / "sessions").mkdir(parents=True, exist_ok=True)
        self.sockets.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.sockets, 0o700)
        self.bound: list[socket.socket] = []

    def write(self, chat: ChatSpec) -> None:
        socket_path = self.sockets / f"{chat.pid}.sock"
        if chat.live and not socket_path.exists():
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(str(socket_path))
            os.chmod(socket_path, 0o600)
            self.bound.append(server)
        entry = {
            "pid": chat.pid,
            "sessionId": chat.session_id,
            "cwd": chat.cwd,
            "startedAt": int(T0 * 1000) - 3_600_000,
            "procStart": BIRTH if chat.live else "1",
            "version": chat.version,
            "peerProtocol": 1,
            "kind": "interactive",
            "entrypoint": "cli",
            "name": chat.name,
            "nameSource": "user",
            "messagingSocketPath": str(socket_path),
            "status": chat.status,
            "updatedAt": int(T0 * 1000),
        }
        if chat.tmux is not None:
            entry["tmux"] = chat.tmux
        (self.config_dir / "sessions" / f"{chat.pid}.json").write_text(json.dumps(entry))
        project = self.config_dir / "projects" / escape_cwd(chat.cwd)
        project.mkdir(parents=True, exist_ok=True)
        lines = [{"type": "permission-mode", "permissionMode": chat.mode}, *chat.transcript]
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        (project / f"{chat.session_id}.jsonl").write_text(text)

    def close(self) -> None:
        for server in self.bound:
            server.close()


# --- the staged fleet and ledger -----------------------------------------------------------

CHATS = (
    # mac, name, pid, status, permission mode, live
    ("office", "importer", 4101, "idle", "auto", True),
    ("office", "builder", 4102, "busy", "auto", True),
    ("office", "reviewer", 4103, "waiting", "bypassPermissions", True),
    ("office", "locked", 4104, "idle", "default", True),
    ("office", "flaky", 4105, "idle", "auto", True),
    ("office", "gone", 4106, "idle", "auto", False),
    ("laptop", "docs", 5201, "idle", "auto", True),
    ("laptop", "taker", 5202, "idle", "auto", True),
)
REFUSE_SETTINGS = '{"crossSessionInbound": "refuse"}'


@dataclass
class Staged:
    """What `stage()` built: the home, the fleet, the chats and the ids worth naming."""

    home: Path
    clock: Clock
    fleet: Fleet
    chats: dict[str, ChatSpec]
    outbox: dict[str, str]
    todos: dict[str, int]
    folders: list[MacFolder]

    def app(self, **options: Any) -> CoopApp:
        options.setdefault("coordinator", "none")
        options.setdefault("clock", self.clock)
        app = CoopApp(self.home, Office(self.fleet), **options)
        # A toast stays while a test looks for it: on a loaded machine the look may come
        # later than Textual's 5 s, when the toast is gone (raised, yet never seen).
        app.NOTIFICATION_TIMEOUT = TOAST_SECONDS
        return app

    def engine(self, actor: str = "dad", seed: int = 99) -> Engine:
        """Another writer in this process. It shares the connection the app opened (the
        models' one database): call it once the app has opened the ledger."""
        return Engine(database.obj, clock=self.clock, actor=actor, new_id=id_sequence(seed))

    def close(self) -> None:
        for folder in self.folders:
            folder.close()
        for host in self.fleet.hosts.values():
            host.close()


def _cursor(chat: ChatSpec, verdict: str, source: str, at: float, offset: int) -> dict[str, Any]:
    inbound = {"verdict": verdict, "source": source, "mode": chat.mode, "dialog_expiry": "5m"}
    if chat.mode == "bypassPermissions":
        inbound["dialog_expiry"] = "60s"
    return {
        "host": chat.mac,
        "native_session": chat.session_id,
        "inbound": inbound,
        "offset": offset,
        "sent_at": at,
        "target": {
            "pid": chat.pid,
            "birth": BIRTH,
            "socket_path": f"sockets/{chat.mac}/{chat.pid}.sock",
        },
        "transcript": chat.transcript_path,
    }


def stage(
    root: Path, extra: Iterable[ChatSpec] = (), hosts: Mapping[str, Host] | None = None
) -> Staged:
    """Chats on an office and a laptop, and deliveries in every state, all fixed.

    Call with the working folder at `root` (the fleet's paths are relative to it)."""
    assert Path.cwd().resolve() == root.resolve(), "stage() needs the working folder at root"
    clock = Clock(T0)
    session_ids = id_sequence(1)
    chats: dict[str, ChatSpec] = {}
    for mac, name, pid, status, mode, live in CHATS:
        argv = ["claude", "--settings", REFUSE_SETTINGS] if name == "locked" else ["claude"]
        chats[name] = ChatSpec(mac, name, pid, status, mode, live, argv, session_id=session_ids())
    for chat in extra:
        chat.session_id = chat.session_id or session_ids()
        chats[chat.name] = chat
    home = root / "coop-home"
    engine = Engine(open_ledger(home), clock=clock, actor="dad", new_id=id_sequence(2))
    coop = Engine(engine.db, clock=clock, actor="coop", new_id=engine.new_id)
    outbox: dict[str, str] = {}
    todos: dict[str, int] = {}
    uids = id_sequence(3)
    with fixed_nonces():
        titles = {
            "importer": "Fix the flaky importer test",
            "builder": "Get the build green again",
            "reviewer": "Review the parser rewrite",
            "locked": "Rotate the signing keys",
            "flaky": "Trim the CI matrix",
            "docs": "Write the release notes",
            "gone": "Update the changelog",
        }
        invited: dict[str, dict[str, Any]] = {}
        for name, title in titles.items():
            todos[name] = engine.add_todo(title, project=name)["id"]
            chat = chats[name]
            clock.advance(2)
            invited[name] = engine.invite(todos[name], chat.ref, chat.mac, name=name, cwd=chat.cwd)
            outbox[name] = invited[name]["outbox"]
        todos["taker"] = engine.add_todo("Bump the SDK pin", project="laptop")["id"]
        todos["stray"] = engine.add_todo("Pin the lint rules", project="office")["id"]
        todos["open"] = engine.add_todo("Tidy the test fixtures", project="office")["id"]
        verdicts = {
            "reviewer": ("hold", "permission-mode-parity"),
            "locked": ("refuse", "settings-flag"),
        }
        for name in ("importer", "builder", "reviewer", "locked", "flaky", "docs"):
            chat = chats[name]
            verdict, source = verdicts.get(name, ("accept", "permission-mode-parity"))
            at = clock.advance(1.5)
            attempt = coop.mark_uncertain(outbox[name], _cursor(chat, verdict, source, at, 1600))
            coop.record_transport(
                outbox[name],
                attempt["attempt"],
                {"ok": True, "written": True, "stage": "done", "bytes": 402},
            )
        for name, shape in (("importer", "user"), ("builder", "queued_command"), ("docs", "user")):
            _deliver(coop, clock, chats[name], outbox[name], invited[name]["nonce"], shape, uids)
            chats[name].transcript += [
                peer(chats[name], clock.now, outbox[name], "Coop invites you to todo"),
                said(
                    chats[name],
                    clock.now + 1,
                    f"I will take it. COOP_ACCEPT {invited[name]['nonce']}",
                    uids(),
                ),
                turn_end(chats[name], clock.now + 1, uids()),
            ]
        # The importer's work arrived and its outcome is in: all five facts.
        work = _work_of(outbox["importer"])
        _send(coop, clock, chats["importer"], work, "user")
        clock.advance(30)
        engine.report_outcome(todos["importer"], "fixed: the importer test is stable", "worker")
        outbox["importer_work"] = work
        outbox["docs_work"] = _work_of(outbox["docs"])
        _send(coop, clock, chats["docs"], outbox["docs_work"], "user")
        outbox["builder_work"] = _work_of(outbox["builder"])
        # Three proven losses, one of each reason.
        reviewer = chats["reviewer"]
        invitation_text = _payload_text(outbox["reviewer"])
        reviewer.transcript.append(held(reviewer, clock.now, invitation_text, uids()))
        coop.record_held(
            outbox["reviewer"],
            {
                "offset": 115,
                "preview": invitation_text[:80],
                "timestamp": "2026-05-04T09:00:30.000Z",
                "cause": "parity",
            },
        )
        for name, reason, extra_evidence in (
            ("reviewer", "held-for-approval-then-expired", {}),
            ("locked", "refused-by-receiver-policy", {}),
            ("flaky", "receiver-idle-without-entry", {"receiver_status": "idle"}),
        ):
            row_cursor = _cursor_of(outbox[name])
            observed = clock.advance(121)
            coop.expire(
                outbox[name],
                {
                    "reason": reason,
                    "message_id": outbox[name],
                    "native_session": chats[name].session_id,
                    "inbound_at_send": row_cursor["inbound"],
                    "sent_at": row_cursor["sent_at"],
                    "observed_at": observed,
                    "transcript_offset": row_cursor["offset"],
                    **extra_evidence,
                },
            )
        # Dad sent the reviewer's invitation again; it is held again, undecided.
        clock.advance(5)
        outbox["reviewer_again"] = engine.resend(outbox["reviewer"], "dad")["outbox"]
        at = clock.advance(1)
        attempt = coop.mark_uncertain(
            outbox["reviewer_again"], _cursor(reviewer, "hold", "permission-mode-parity", at, 715)
        )
        coop.record_transport(
            outbox["reviewer_again"],
            attempt["attempt"],
            {"ok": True, "written": True, "stage": "done", "bytes": 498},
        )
        again_text = _payload_text(outbox["reviewer_again"])
        reviewer.transcript.append(held(reviewer, clock.now, again_text, uids()))
        coop.record_held(
            outbox["reviewer_again"],
            {
                "offset": 715,
                "preview": again_text[:80],
                "timestamp": "2026-05-04T09:07:00.000Z",
                "cause": "parity",
            },
        )
        # The exited chat's invitation cannot be sent: refused before any byte.
        clock.advance(3)
        coop.record_refusal(outbox["gone"], f"No live chat with session {chats['gone'].session_id}")
        # A CLI take on the laptop, searched for once and not found yet; and a refused one.
        clock.advance(20)
        taken = engine.take_cli(todos["taker"], chats["taker"].ref, "laptop")
        coop.record_adoption_search(
            taken["session"],
            {
                "searched": [{"host": "laptop", "matches": 0}, {"host": "office", "matches": 0}],
                "found": None,
                "result": "not found",
            },
        )
        clock.advance(10)
        stray_id = session_ids()
        stray = engine.take_cli(todos["stray"], f"claude:{stray_id}", "office")
        coop.record_adoption_search(
            stray["session"],
            {
                "searched": [{"host": "office", "matches": 1}],
                "found": "office",
                "result": "refused: another enrollment names this chat on office",
            },
            refused=True,
        )
        clock.advance(40)
    for name, chat in chats.items():
        if not chat.transcript and name not in ("gone",):
            chat.transcript = [
                human(
                    chat,
                    T0 - 600,
                    "Have a look around this project and summarise it for me.",
                    uids(),
                ),
                said(chat, T0 - 590, "It is a small Python package with a test suite.", uids()),
                turn_end(chat, T0 - 590, uids()),
            ]
    macs = ["office", "laptop"] + sorted(
        {chat.mac for chat in chats.values()} - {"office", "laptop"}
    )
    folders = {mac: MacFolder(mac) for mac in macs}
    for chat in chats.values():
        folders[chat.mac].write(chat)
    fleet_hosts: dict[str, Host] = {}
    for mac, folder in folders.items():
        argv = {chat.pid: chat.argv for chat in chats.values() if chat.mac == mac}
        managed = Path("managed") / mac
        managed.mkdir(parents=True, exist_ok=True)
        fleet_hosts[mac] = LocalHost(
            mac, config_dir=folder.config_dir, platform=StillPlatform(argv), managed_dir=managed
        )
    fleet_hosts.update(hosts or {})
    return Staged(
        home, clock, Fleet("office", fleet_hosts), chats, outbox, todos, list(folders.values())
    )


def _deliver(
    coop: Engine,
    clock: Clock,
    chat: ChatSpec,
    outbox_id: str,
    nonce: str,
    shape: str,
    uids: Callable[[], str],
) -> None:
    """A receipt for the invitation, then the chat's COOP_ACCEPT final."""
    _receipt(coop, clock, chat, outbox_id, shape)
    at = clock.advance(4)
    coop.accept(
        outbox_id,
        nonce,
        {
            "final": f"I will take it. COOP_ACCEPT {nonce}",
            "offset": 3902,
            "turn_end": 4502,
            "timestamp": _iso(at),
        },
    )


def _receipt(coop: Engine, clock: Clock, chat: ChatSpec, outbox_id: str, shape: str) -> None:
    at = clock.advance(0.5)
    coop.record_receipt(
        outbox_id,
        {
            "host": chat.mac,
            "offset": 2661,
            "shape": shape,
            "entry_uuid": outbox_id,
            "origin": {"kind": "peer", "from": "cwkCoop", "msg_id": outbox_id},
            "timestamp": _iso(at),
            "problems": [],
            "transcript": chat.transcript_path,
        },
    )


def _send(coop: Engine, clock: Clock, chat: ChatSpec, outbox_id: str, shape: str) -> None:
    at = clock.advance(1)
    attempt = coop.mark_uncertain(
        outbox_id, _cursor(chat, "accept", "permission-mode-parity", at, 4502)
    )
    coop.record_transport(
        outbox_id, attempt["attempt"], {"ok": True, "written": True, "stage": "done", "bytes": 380}
    )
    _receipt(coop, clock, chat, outbox_id, shape)


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(at))


def _work_of(invitation_id: str) -> str:
    from coop_engine.models import Outbox

    invitation = Outbox.get_by_id(invitation_id)
    work = Outbox.get((Outbox.dispatch == invitation.dispatch_id) & (Outbox.kind == "work"))
    return str(work.id)


def _cursor_of(outbox_id: str) -> dict[str, Any]:
    from coop_engine.models import Outbox

    cursor: dict[str, Any] = Outbox.get_by_id(outbox_id).cursor
    return cursor


def _payload_text(outbox_id: str) -> str:
    from coop_engine.models import Outbox

    return str(Outbox.get_by_id(outbox_id).payload["text"])


# --- driving the app ---------------------------------------------------------------------


def drive(
    app: CoopApp, script: Callable[[Pilot[None]], Awaitable[None]], size: tuple[int, int] = SIZE
) -> None:
    """Run `script` against the app headless (pytest-asyncio is not used: one event loop
    per test, here)."""

    async def main() -> None:
        async with app.run_test(size=size, notifications=True) as pilot:
            await script(pilot)

    asyncio.run(main())


async def until(
    pilot: Pilot[None], check: Callable[[], object], timeout: float = HANG, what: str = ""
) -> float:
    """Wait (letting the app run) until `check()` is true; returns the seconds it took."""
    started = time.monotonic()
    while True:
        if check():
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise AssertionError(
                f"not within {timeout}s: {what or check}\n{screen_text(pilot.app)}"
            )
        await pilot.pause(0.02)


async def open_with(
    pilot: Pilot[None], key: str, screen: type[ScreenType], timeout: float = HANG
) -> ScreenType:
    """Press `key` and wait until the app shows a `screen`, composed and laid out (pushed
    is not yet drawn, and tests read what it says from the screen); that screen. Not
    `settle`: a worker the screen did not start (a hung Mac's survey) is not waited for."""
    await pilot.press(key)
    await until(pilot, lambda: isinstance(pilot.app.screen, screen), timeout, screen.__name__)
    await pilot.pause()  # its events handled, then its layout and paint
    shown = pilot.app.screen
    assert isinstance(shown, screen)
    return shown


def screen_text(app: Any) -> str:
    """The text the terminal shows now, line by line (what a user reads)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text for strip in strips)


def flat(text: str) -> str:
    """Text with runs of whitespace collapsed, for phrases a layout may wrap."""
    return " ".join(text.split())


def shows(app: Any, phrase: str) -> bool:
    """Whether the screen shows the phrase however it was wrapped, in a table's column
    or in a toast (whose lines begin with its bar): whitespace and bars are ignored."""

    def bare(text: str) -> str:
        return "".join(text.replace(TOAST_BAR, "").split())

    return bare(phrase) in bare(screen_text(app))


async def loaded(pilot: Pilot[None]) -> None:
    """The panes show the ledger and every Mac has answered once."""
    app: Any = pilot.app
    await until(pilot, lambda: app.outbox_pane.row_count > 0, what="outbox rows")
    await until(pilot, lambda: len(app.surveys) == len(app.office.names), what="every Mac surveyed")
    await until(pilot, lambda: app.claim_told, what="the status line's coordinator")
    await settle(pilot)


async def settle(pilot: Pilot[None], timeout: float = 2 * HANG) -> None:
    """Every worker the app started has finished and its result is on screen."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    while any(not w.is_finished for w in app.workers) and time.monotonic() < deadline:
        await pilot.pause(0.02)
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


def freeze_cursors(app: Any) -> None:
    """Every text cursor on screen shown steadily: a snapshot never catches a blink."""
    from textual.widgets import Input

    for typed in app.screen.query(Input):
        typed.cursor_blink = False


def row_index(table: Any, key: str) -> int:
    return int(table.get_row_index(key))


async def select_row(pilot: Pilot[None], table: Any, key: str) -> None:
    """Focus a pane and put its cursor on the row with this key."""
    table.focus()
    table.move_cursor(row=row_index(table, key))
    await pilot.pause()
