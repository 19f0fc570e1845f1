"""Dad's decisions from the command line that look at the receiver first (issue 12):
withdraw, Send again's second look, an invitation to a chat no Mac has, the chief."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hosts.sim.launch import SimFleet


def rows(run_coop: Any, env: dict[str, str]) -> list[dict[str, Any]]:
    done = run_coop("outbox", "--json", env=env)
    assert done.returncode == 0, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)
    return found


def invited(run_coop: Any, env: dict[str, str], ref: str) -> str:
    run_coop("todo", "add", "Fix the importer", env=env)
    done = run_coop("invite", "1", "--session", ref, env=env)
    assert done.returncode == 0, done.stderr
    return str(done.stdout.strip())


def test_withdraw_takes_back_a_pending_invitation_once(run_coop: Any, fleet: SimFleet) -> None:
    chat = fleet.start()
    env = {"CLAUDE_CONFIG_DIR": str(fleet.config_dir)}
    outbox_id = invited(run_coop, env, chat.ref)
    done = run_coop("withdraw", outbox_id[:8], "--by", "dad", env=env)
    assert (done.returncode, done.stdout.strip()) == (0, f"{outbox_id} withdrawn")
    (row,) = rows(run_coop, env)
    assert row["state"] == "cancelled"
    todo = json.loads(run_coop("todo", "list", "--json", env=env).stdout)[0]
    assert todo["state"] == "open"  # the invitation went with it: the todo may be offered
    run_coop("tick", env=env)
    assert chat.frames() == []  # nothing was ever sent
    again = run_coop("withdraw", outbox_id, "--by", "dad", env=env)
    assert again.returncode == 1
    assert "only a pending one can be withdrawn" in again.stderr


def test_a_sent_claude_frame_cannot_be_withdrawn(run_coop: Any, fleet: SimFleet) -> None:
    chat = fleet.start("--lose-frames")  # the frame stays uncertain
    env = {"CLAUDE_CONFIG_DIR": str(fleet.config_dir)}
    outbox_id = invited(run_coop, env, chat.ref)
    run_coop("tick", env=env)
    assert rows(run_coop, env)[0]["state"] == "uncertain"
    done = run_coop("withdraw", outbox_id, "--by", "dad", env=env)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "coop: a frame in a Claude inbox cannot be taken back; wait for its receipt or its"
        " proof of loss"
    )
    assert rows(run_coop, env)[0]["state"] == "uncertain"


def test_withdraw_is_dads_or_the_chiefs_decision(run_coop: Any, fleet: SimFleet) -> None:
    chat = fleet.start()
    env = {"CLAUDE_CONFIG_DIR": str(fleet.config_dir)}
    outbox_id = invited(run_coop, env, chat.ref)
    inside = {**env, "PIPPA_COOP_SESSION": chat.ref}
    done = run_coop("withdraw", outbox_id, "--by", "dad", env=inside)
    assert done.returncode == 1 and "--by dad is refused inside a chat" in done.stderr
    assert rows(run_coop, env)[0]["state"] == "pending"


def test_send_again_to_a_receiver_that_still_refuses_is_refused(
    run_coop: Any, fleet: SimFleet
) -> None:
    chat = fleet.start("--inbound", "refuse")
    env = {"CLAUDE_CONFIG_DIR": str(fleet.config_dir)}
    outbox_id = invited(run_coop, env, chat.ref)
    run_coop("tick", env=env)
    assert rows(run_coop, env)[0]["reason"] == "refused-by-receiver-policy"
    done = run_coop("resend", outbox_id, "--by", "dad", env=env)
    assert done.returncode == 1
    assert done.stderr == (
        "coop: the receiver still refuses peer messages: its crossSessionInbound must change"
        " first (predicted at send: refuse (settings-flag); today: refuse (settings-flag))\n"
    )
    assert len(rows(run_coop, env)) == 1  # nothing was created


def test_send_again_after_a_refusal_by_policy_reads_the_receivers_settings_now(
    run_coop: Any, fleet: SimFleet, tmp_path: Path
) -> None:
    settings = tmp_path / "receiver-settings.json"
    settings.write_text('{"crossSessionInbound": "refuse"}')
    chat = fleet.start("--settings", str(settings))
    env = {"CLAUDE_CONFIG_DIR": str(fleet.config_dir)}
    outbox_id = invited(run_coop, env, chat.ref)
    run_coop("tick", env=env)
    assert rows(run_coop, env)[0]["reason"] == "refused-by-receiver-policy"
    settings.write_text("{ not json")
    unread = run_coop("resend", outbox_id, "--by", "dad", env=env)
    assert unread.returncode == 1
    (line,) = unread.stderr.splitlines()
    assert line.startswith(f"coop: the receiver's settings cannot be read now ({settings}: ")
    assert "Send again needs them read and no longer refusing" in line
    assert len(rows(run_coop, env)) == 1  # nothing was created
    settings.write_text('{"crossSessionInbound": "accept"}')
    again = run_coop("resend", outbox_id, "--by", "dad", env=env)
    assert again.returncode == 0, again.stderr
    assert "predicted at send: refuse (settings-flag); today: accept (settings-flag)" in (
        again.stderr
    )
    assert len(rows(run_coop, env)) == 2


def test_send_again_after_a_parity_loss_warns_it_will_be_held_again(
    run_coop: Any, fleet: SimFleet
) -> None:
    chat = fleet.start("--dangerously-skip-permissions", "--dialog-expiry", "60s")
    env = {"CLAUDE_CONFIG_DIR": str(fleet.config_dir)}
    outbox_id = invited(run_coop, env, chat.ref)
    sent = run_coop("tick", env=env)
    assert sent.returncode == 0
    (row,) = rows(run_coop, env)
    at = row["inbound"] and __import__("time").time() + 3600
    run_coop("tick", "--at", str(at), env=env)
    assert rows(run_coop, env)[0]["reason"] == "held-for-approval-then-expired"
    done = run_coop("resend", outbox_id, "--by", "dad", env=env)
    assert done.returncode == 0, done.stderr
    assert "today: hold (permission-mode-parity)" in done.stderr
    assert "will hold it again" in done.stderr
    assert len(rows(run_coop, env)) == 2


def test_chief_set_refuses_a_chat_neither_enrolled_nor_live(run_coop: Any, fleet: SimFleet) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(fleet.config_dir)}
    fleet.config_dir.mkdir(parents=True, exist_ok=True)
    ghost = "claude:0badc0de-0000-4000-8000-000000000000"
    done = run_coop("chief", "set", ghost, env=env)
    assert done.returncode == 1
    assert done.stderr.strip() == f"coop: {ghost} is neither enrolled nor live (office: 0)"
    assert run_coop("chief", "show", env=env).stdout.strip() == "(no chief)"
    chat = fleet.start()
    assert run_coop("chief", "set", chat.ref, env=env).returncode == 0
    assert run_coop("chief", "show", env=env).stdout.strip() == chat.ref


def unreachable_laptop(home: Path) -> None:
    """A fleet whose laptop refuses every connection (nothing listens on port 1)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "fleet.toml").write_text(
        'office = "office"\n[[mac]]\nname = "laptop"\nhost = "127.0.0.1"\nport = 1\ntimeout = 5\n'
    )


def test_an_invitation_to_a_named_mac_that_cannot_be_asked_waits_with_a_warning(
    run_coop: Any, fleet: SimFleet, coop_home: Path
) -> None:
    unreachable_laptop(coop_home)
    env = {"CLAUDE_CONFIG_DIR": str(fleet.config_dir)}
    run_coop("todo", "add", "Write the release notes", env=env)
    ref = "claude:0badc0de-0000-4000-8000-000000000000"
    done = run_coop("invite", "1", "--session", ref, "--host", "laptop", env=env)
    assert done.returncode == 0, done.stderr
    (warning,) = done.stderr.splitlines()
    assert warning.startswith("coop: warning: laptop: ")
    assert warning.endswith("the invitation waits until laptop answers")
    (row,) = rows(run_coop, env)
    assert (row["host"], row["state"]) == ("laptop", "pending")


def test_an_invitation_no_reachable_mac_has_names_the_macs_asked(
    run_coop: Any, fleet: SimFleet, coop_home: Path
) -> None:
    unreachable_laptop(coop_home)
    env = {"CLAUDE_CONFIG_DIR": str(fleet.config_dir)}
    run_coop("todo", "add", "Write the release notes", env=env)
    ref = "claude:0badc0de-0000-4000-8000-000000000000"
    done = run_coop("invite", "1", "--session", ref, env=env)
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"coop: No Mac has a live chat {ref} (asked: office, laptop; laptop")
    assert rows(run_coop, env) == []
