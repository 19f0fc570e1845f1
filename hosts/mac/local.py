"""LocalHost: the Host operations answered on this machine.

The ssh helper runs this same class on the remote Mac, so every operation takes and
returns JSON-able values and touches only the standard library.
"""

from __future__ import annotations

import os
import time
from _thread import allocate_lock
from pathlib import Path

from hosts.mac import native, survey, transcripts
from hosts.mac.codex_home import default_codex_home, no_home_listing
from hosts.mac.host import OPERATIONS, Host, HostError, NativeRefusal
from hosts.mac.platforms import Platform, current_platform
from hosts.mac.settings import SettingsReader, default_config_dir, mode_buffer, recorded_mode

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from typing import Any

MAX_TRANSCRIPT_READ = 16 << 20
APP_SERVER_IDLE = 60.0  # seconds a `codex app-server` is kept with nothing in flight


class LocalHost(Host):
    def __init__(
        self,
        name: str = "office",
        config_dir: Path | None = None,
        platform: Platform | None = None,
        managed_dir: Path | None = None,
        codex_home: Path | None = None,
        codex: str | None = None,
    ) -> None:
        self.name = name
        self.codex = codex  # the `codex` executable; None: the one on PATH
        self.config_dir = config_dir or default_config_dir()
        self.platform = platform or current_platform()
        self.managed_dir = managed_dir or self.platform.managed_settings_dir
        self.codex_home = codex_home
        self._transcripts: dict[str, str] = {}
        self._last_good: dict[str, dict[str, Any]] = {}  # registry file -> its last good reading
        self._surveyor = survey.Surveyor()
        self._cwds: dict[str, str] = {}  # session id -> cwd, as the last survey read them
        self._long_polls: set[str] = set()  # whose watch files this host keeps
        self._watcher: Any = None  # hosts.mac.watch.Watcher, made on the first long-poll
        self._app: Any = None  # hosts.mac.codex_door.AppServer, while envelopes are in flight
        # One request at a time on its stdio, from any thread. threading.Lock is this same
        # lock, and importing threading costs `coop chats` most of a millisecond.
        self._app_lock = allocate_lock()

    def call(self, op: str, **args: Any) -> Any:
        if op not in OPERATIONS:
            raise ValueError(f"unknown host operation {op!r}")
        method = getattr(self, f"_op_{op}")
        try:
            return method(**args)
        except OSError as error:
            # A folder or file this Mac cannot read now (EIO, EACCES, EMFILE...): the Mac
            # could not be asked, as SshHost says of a Mac it cannot reach.
            raise HostError(self.name, f"{op}: {error}") from None

    # --- registry ---------------------------------------------------------------------

    def _scan(self) -> native.Scan:
        """A fresh reading: what a send and its checks stand on."""
        return native.scan_registry(self.config_dir, self.platform)

    def _listing_scan(self) -> native.Scan:
        """A reading for listings and surveys: a file torn now is its last good reading,
        marked stale, so a chat rewriting its entry is never called exited for it."""
        return native.scan_registry(self.config_dir, self.platform, self._last_good)

    def _live_entry(
        self, session_id: str, scan: native.Scan | None = None
    ) -> native.RegistryEntry | None:
        scan = scan or self._scan()
        live = [e for e in scan.entries if e.live and e.session_id == session_id]
        return live[0] if len(live) == 1 else None

    def _op_chats(self, with_policy: bool = False, codex: bool = False) -> dict[str, Any]:
        scan = self._listing_scan()
        reader = self._settings_reader() if with_policy else None
        buffer = mode_buffer() if with_policy else None
        folders: dict[str, str | None] = {}
        chats = []
        for entry in scan.entries:
            data = entry.data
            chat = {
                "host": self.name,
                "session_id": entry.session_id,
                "pid": entry.pid,
                "live": entry.live,
                "name": data.get("name"),
                "status": data.get("status") if entry.live else "exited",
                "cwd": data.get("cwd"),
                "tmux": data.get("tmux"),
                "socket": native.socket_verdict(entry, folders),
                "entry": data,
                "stale": entry.stale,
            }
            if reader is not None and entry.live:
                mode = self._recorded_mode(str(entry.session_id), data.get("cwd"), buffer)
                chat["policy_inputs"] = reader.inputs(data, *mode)
            chats.append(chat)
        answer: dict[str, Any] = {"host": self.name, "chats": chats, "skipped": scan.skipped}
        if codex:
            answer["codex"] = self._op_codex_threads()
        return answer

    def _op_target(self, session_id: str) -> dict[str, Any]:
        return native.target(self.config_dir, self.platform, session_id).as_dict()

    def _op_send_frame(
        self, expected: dict[str, Any], session_id: str, line: str
    ) -> dict[str, Any]:
        pinned = native.Target(**expected)
        return native.send_frame(self.config_dir, self.platform, pinned, session_id, line.encode())

    def _op_registry_entry(self, session_id: str) -> dict[str, Any] | None:
        entry = self._live_entry(session_id)
        return None if entry is None else entry.data

    def _settings_reader(self) -> SettingsReader:
        return SettingsReader(self.config_dir, self.managed_dir, self.platform.cmdline)

    def _op_policy_inputs(self, session_id: str) -> dict[str, Any]:
        scan = self._scan()
        entry = self._live_entry(session_id, scan)
        if entry is None:
            raise native.NativeRefusal(native.no_live_chat(session_id, scan))
        mode = self._recorded_mode(session_id, entry.data.get("cwd"))
        return self._settings_reader().inputs(entry.data, *mode)

    # --- transcripts ------------------------------------------------------------------

    def _transcript(self, session_id: str, cwd: str | None = None) -> str | None:
        known = self._transcripts.get(session_id)
        if known is not None and os.path.exists(known):
            return known
        found = transcripts.locate(
            self.config_dir, session_id, cwd if isinstance(cwd, str) else None
        )
        if found is not None:
            self._transcripts[session_id] = found
        return found

    def _recorded_mode(
        self, session_id: str, cwd: str | None, buffer: bytearray | None = None
    ) -> tuple[str | None, bool]:
        """The newest permission mode the chat's transcript recorded, and whether that is
        the whole transcript's answer (settings.recorded_mode; a chat with no transcript
        recorded none). Read where it was found before, or where its cwd puts it, at
        once: a listing reads 200 of them, and looking first costs as much as the read.
        Only when no file is there is it looked for by the id (_transcript)."""
        known = self._transcripts.get(session_id)
        if known is None and isinstance(cwd, str):
            known = transcripts.guessed(self.config_dir, session_id, cwd)
        read = recorded_mode(known, buffer)
        if read is None:
            read = recorded_mode(self._transcript(session_id, cwd), buffer)
        elif known is not None:
            self._transcripts[session_id] = known
        return read if read is not None else (None, True)

    def _op_transcript_position(self, session_id: str) -> dict[str, Any]:
        path = self._transcript(session_id)
        if path is None:
            # No transcript exists until the chat's first message: start at 0.
            return {"path": None, "size": 0, "inode": None}
        try:
            info = os.stat(path)
        except FileNotFoundError:
            return {"path": path, "size": 0, "inode": None}
        return {"path": path, "size": info.st_size, "inode": info.st_ino}

    def _op_transcript_scan(
        self, session_id: str, offset: int, needles: list[str], inode: int | None = None
    ) -> dict[str, Any]:
        path = self._transcript(session_id)
        chunk = transcripts.scan_for(path, offset, [n.encode() for n in needles], inode)
        return chunk.as_dict()

    def _op_transcript_read(
        self, session_id: str, offset: int, max_bytes: int, inode: int | None = None
    ) -> dict[str, Any]:
        path = self._transcript(session_id)
        chunk = transcripts.read_lines(path, offset, min(max_bytes, MAX_TRANSCRIPT_READ), inode)
        return chunk.as_dict()

    def _op_transcript_tail(self, session_id: str, max_bytes: int) -> dict[str, Any]:
        path = self._transcript(session_id)
        return transcripts.tail(path, min(max_bytes, MAX_TRANSCRIPT_READ)).as_dict()

    # --- adoption, health ------------------------------------------------------

    def _codex_home(self) -> str:
        # Absolute: the app-server runs with its own working directory.
        return os.path.abspath(self.codex_home or default_codex_home())

    def _op_codex_threads(self) -> dict[str, Any]:
        """The thread list, each thread saying whether it is `open` now (held). A Mac
        without Codex answers without loading what reads Codex's records."""
        absent = no_home_listing(self._codex_home())
        if absent is not None:
            return absent
        from hosts.mac import codex, codex_door

        listing = codex.thread_list(self._codex_home())
        held = codex_door.open_threads(self._codex_home(), self.platform)
        for thread in listing["threads"]:
            thread["open"] = thread["id"] in held
        return listing

    def _op_find_session(self, vendor: str, native_id: str) -> dict[str, Any]:
        if vendor == "codex":
            from hosts.mac import codex

            # A Codex take needs a saved thread in this Mac's list, not a live process.
            found = codex.find_thread(self._codex_home(), native_id)
            matches = 0 if found["archived"] else found["matches"]
            thread = found["thread"] or {}
            answer = {"host": self.name, "matches": matches, "archived": found["archived"]}
            return {**answer, "name": thread.get("name"), "cwd": thread.get("cwd")}
        if vendor != "claude":
            raise ValueError(f"no {vendor} door on this host")
        live = [e for e in self._scan().entries if e.live and e.session_id == native_id]
        answer = {"host": self.name, "matches": len(live), "pids": [e.pid for e in live]}
        if len(live) == 1:
            answer.update(status=live[0].data.get("status"), name=live[0].data.get("name"))
        return answer

    # --- the Codex door --------------------------------------------------------------

    def _thread(self, thread_id: str) -> str:
        from hosts.mac.codex_records import is_thread_id

        if not is_thread_id(thread_id):
            # Only a UUID-shaped id ever reaches Codex: `exec resume` with a malformed
            # one silently makes a new thread.
            raise NativeRefusal(f"{thread_id!r} is not a Codex thread id")
        return thread_id

    def _rollout(self, thread_id: str) -> dict[str, Any] | None:
        from hosts.mac import codex_door

        return codex_door.rollout_of(self._codex_home(), self._thread(thread_id))

    def _op_codex_position(self, thread_id: str) -> dict[str, Any]:
        from hosts.mac import codex_door

        rollout = self._rollout(thread_id)
        self._codex_executable()  # no codex here to send with: refused before any intent
        is_open = codex_door.is_open(self._codex_home(), thread_id, self.platform)
        if rollout is None:
            return {"exists": False, "path": None, "size": 0, "inode": None, "open": is_open}
        info = os.stat(rollout["path"])
        position = {"exists": True, "size": info.st_size, "inode": info.st_ino, "open": is_open}
        return {**rollout, **position}

    def _codex_executable(self) -> str:
        import shutil

        found = self.codex or shutil.which("codex")
        if found is None:
            raise NativeRefusal(f"no codex executable on {self.name}'s PATH (fleet.toml: codex)")
        return found

    def _app_server(self) -> Any:
        from hosts.mac import codex_door

        if self._app is not None and not self._app.alive:
            self._release_app_server()
        if self._app is None:
            self._app = codex_door.AppServer(self._codex_executable(), self._codex_home())
        return self._app

    def _release_app_server(self) -> None:
        if self._app is not None:
            self._app.close()
            self._app = None

    def _op_codex_queue_add(self, thread_id: str, client_id: str, text: str) -> dict[str, Any]:
        self._thread(thread_id)
        with self._app_lock:
            return self._queue_add(thread_id, client_id, text)

    def _queue_add(self, thread_id: str, client_id: str, text: str) -> dict[str, Any]:
        from hosts.mac import codex_door

        try:
            app = self._app_server()
        except codex_door.AppServerGone as error:
            # No app-server to ask (an older Codex): nothing left yet; `codex queue`.
            return self._queue_cli(thread_id, client_id, text, str(error))
        try:
            return codex_door.add(app, thread_id, client_id, text)
        except codex_door.CodexRefused as refused:
            if refused.no_queue_api:
                return self._queue_cli(thread_id, client_id, text, str(refused))
            said = f"Codex refused: {refused}"
            return {"ok": False, "written": False, "stage": "add", "error": said}

    def _queue_cli(self, thread_id: str, client_id: str, text: str, why: str) -> dict[str, Any]:
        from hosts.mac import codex_door

        message = f"{text}\n\n{codex_door.marker(client_id)}"
        executable, home = self._codex_executable(), self._codex_home()
        sent = codex_door.queue_cli(executable, home, thread_id, message)
        sent["fallback"] = f"no queue API ({why}): sent by `codex queue`, no client id"
        return sent

    def _op_codex_queue_delete(self, thread_id: str, queued_id: str) -> dict[str, Any]:
        from hosts.mac import codex_door

        self._thread(thread_id)
        try:
            with self._app_lock:
                return codex_door.delete(self._app_server(), thread_id, queued_id)
        except (codex_door.AppServerGone, codex_door.CodexRefused) as error:
            raise HostError(self.name, f"codex_queue_delete: {error}") from None

    def _op_codex_queued(self, thread_id: str) -> dict[str, Any]:
        from hosts.mac import codex_door

        home = self._codex_home()
        waiting = codex_door.queued(home, self._thread(thread_id))
        return {"queued": waiting, "open": codex_door.is_open(home, thread_id, self.platform)}

    def _op_rollout_scan(
        self, thread_id: str, offset: int, needles: list[str], inode: int | None = None
    ) -> dict[str, Any]:
        rollout = self._rollout(thread_id)
        wanted = [n.encode() for n in needles]
        if rollout is not None and rollout["compressed"]:
            return self._compressed(rollout["path"], offset, wanted)
        path = None if rollout is None else rollout["path"]
        return transcripts.scan_for(path, offset, wanted, inode).as_dict()

    def _op_rollout_read(
        self, thread_id: str, offset: int, max_bytes: int, inode: int | None = None
    ) -> dict[str, Any]:
        rollout = self._rollout(thread_id)
        if rollout is not None and rollout["compressed"]:
            return self._compressed(rollout["path"], offset, None)
        path = None if rollout is None else rollout["path"]
        budget = min(max_bytes, MAX_TRANSCRIPT_READ)
        return transcripts.read_lines(path, offset, budget, inode).as_dict()

    def _op_rollout_tail(self, thread_id: str, max_bytes: int) -> dict[str, Any]:
        rollout = self._rollout(thread_id)
        budget = min(max_bytes, MAX_TRANSCRIPT_READ)
        if rollout is not None and rollout["compressed"]:
            # A compressed rollout is read whole, as every read of one is: its end kept.
            chunk = self._compressed(rollout["path"], 0, None)
            chunk["lines"] = [line for line in chunk["lines"] if line[0] >= chunk["size"] - budget]
            chunk["start"] = chunk["lines"][0][0] if chunk["lines"] else chunk["end"]
            return chunk
        path = None if rollout is None else rollout["path"]
        return transcripts.tail(path, budget).as_dict()

    @staticmethod
    def _compressed(path: str, offset: int, needles: list[bytes] | None) -> dict[str, Any]:
        """A compressed rollout read whole; offsets count its content, so a reading
        carries on across the compression (its inode changed: not a rotation)."""
        from hosts.mac import codex_door

        lines, end, size = codex_door.compressed_lines(path, offset)
        if needles is not None:
            lines = [(at, line) for at, line in lines if any(n in line for n in needles)]
        chunk = transcripts.Chunk(path, offset, end, size, None)
        chunk.lines = lines
        return chunk.as_dict()

    # --- the pass's survey and the long-poll ------------------------------------------

    def _watched(self, envelopes: list[dict[str, Any]]) -> list[str]:
        """The registry folder and the transcript of each chat with an envelope in flight
        (where it will be, from the chat's cwd at the last survey, when it has none yet)."""
        paths = [os.path.join(self.config_dir, "sessions")]
        codex = [e for e in envelopes if e.get("vendor") == "codex"]
        for thread_id in sorted({str(e["session_id"]) for e in codex}):
            rollout = self._rollout(thread_id)
            if rollout is not None:
                paths.append(rollout["path"])
        claude = [e for e in envelopes if e.get("vendor") != "codex"]
        for session_id in sorted({str(e["session_id"]) for e in claude}):
            cwd = self._cwds.get(session_id)
            path = self._transcript(session_id, cwd)
            if path is None and cwd and transcripts.SAFE_SESSION_ID.match(session_id):
                folder = transcripts.escape_cwd(cwd)
                path = os.path.join(self.config_dir, "projects", folder, f"{session_id}.jsonl")
            if path is not None:
                paths.append(path)
        return paths

    def _op_survey(
        self,
        since: str | None = None,
        envelopes: list[dict[str, Any]] | None = None,
        codex: str | None = None,
        long_poll: str | None = None,
    ) -> dict[str, Any]:
        from hosts.mac import watch

        asked = survey.check_envelopes(envelopes or [])
        paths = self._watched(asked)
        if long_poll is not None:
            paths.append(survey.keep_paths(long_poll, paths))
            self._long_polls.add(long_poll)
        files = watch.fingerprint(paths)  # before any read: what changes from here is news
        listing = self._op_chats()
        live = survey.live_mark(c["pid"] for c in listing["chats"] if c["live"])
        digest = f"{files}|{live}"
        self._cwds = {
            str(chat["session_id"]): chat["cwd"]
            for chat in listing["chats"]
            if chat["live"] and isinstance(chat["cwd"], str)
        }

        def scan(envelope: dict[str, Any]) -> dict[str, Any]:
            door = self._op_rollout_scan if envelope.get("vendor") == "codex" else None
            return (door or self._op_transcript_scan)(
                str(envelope["session_id"]),
                envelope["offset"],
                envelope["needles"],
                envelope.get("inode"),
            )

        found, more = survey.sightings(asked, scan)
        answer = self._surveyor.changes(since, listing["chats"])
        answer.update(
            host=self.name,
            skipped=listing["skipped"],
            sightings=found,
            more=more,
            watch={"paths": paths, "digest": digest},
            codex=None if codex is None else self._codex_changes(codex),
            queue=self._codex_queues(asked),
        )
        return answer

    def _codex_queues(self, envelopes: list[dict[str, Any]]) -> dict[str, Any]:
        """For each Codex envelope sent and not yet received, whether it still waits in
        Codex's queue and whether its thread is open; the app-server is let go once no
        envelope is in flight on this Mac and it sat idle a while."""
        waiting = [e for e in envelopes if e.get("vendor") == "codex" and e.get("queue")]
        if self._app is not None and not any(e.get("vendor") == "codex" for e in envelopes):
            with self._app_lock:
                if (
                    self._app is not None
                    and time.monotonic() - self._app.last_used > APP_SERVER_IDLE
                ):
                    self._release_app_server()
        answer: dict[str, Any] = {}
        for thread_id in sorted({str(e["session_id"]) for e in waiting}):
            queued = self._op_codex_queued(thread_id)
            for envelope in waiting:
                if envelope["session_id"] == thread_id:
                    ids = queued["queued"].get(str(envelope["id"]), [])
                    answer[str(envelope["id"])] = {"queued": ids, "open": queued["open"]}
        return answer

    def _codex_changes(self, told: str) -> dict[str, Any]:
        """This Mac's Codex thread list when it differs from the one told (`told` its
        digest); otherwise only the digest."""
        import hashlib
        import json

        threads = self._op_codex_threads()
        digest = hashlib.sha1(json.dumps(threads, sort_keys=True).encode()).hexdigest()
        return {"digest": digest, "threads": None if digest == told else threads}

    def _op_watch(self, paths: list[str], since: str | None, timeout: float) -> dict[str, Any]:
        from hosts.mac import watch

        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise ValueError("paths must be a list of strings")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
            raise ValueError("timeout must be a number of seconds")
        if self._watcher is None:
            self._watcher = watch.Watcher()
        files, _, live = (since or "").partition("|")
        answer: dict[str, Any] = self._watcher.wait(paths, files or None, float(timeout))
        # A chat that died changes no file: its liveness is asked again before answering
        # "unchanged", the way the survey asked it.
        now = survey.live_mark(e.pid for e in self._scan().entries if e.live)
        answer["changed"] = answer["changed"] or (bool(live) and live != now)
        answer["digest"] = f"{answer['digest']}|{now}"
        return answer

    def long_poller(self) -> LocalHost:
        return LocalHost(
            self.name, self.config_dir, self.platform, self.managed_dir, self.codex_home, self.codex
        )

    def close(self) -> None:
        for long_poll in self._long_polls:
            survey.forget(long_poll)
        self._long_polls.clear()
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        with self._app_lock:
            self._release_app_server()

    def _op_health(self) -> dict[str, Any]:
        import socket

        scan = self._scan()
        return {
            "host": self.name,
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "time": time.time(),
            "chats_registered": len(scan.entries),
            "chats_live": sum(1 for e in scan.entries if e.live),
        }
