"""The shapes of the `coop` command's arguments. Malformed input is a usage error (exit
2), found before anything is opened; a well-formed id (or a chat's name) that names
nothing is the ledger's or the fleet's refusal (exit 1), and one that names several is a
usage error again (exit 2: `errors.Ambiguous` lists them). A rejected value is quoted
whole: main's `_last_line` cuts a long one short."""

from __future__ import annotations

import re  # the editable install's finder has loaded it already, and so do the chats


def _wrong(message: str) -> Exception:
    """argparse's ArgumentTypeError, whose words argparse prints as the usage error: a
    value that is right never loads argparse (cli/quick.py parses it without)."""
    from argparse import ArgumentTypeError

    return ArgumentTypeError(message)


LARGEST_ID = 2**63 - 1  # SQLite's and PostgreSQL's largest integer
LAST_UNIX_TIME = 253402300799.0  # 9999-12-31T23:59:59Z: the last second an ISO date shows
LONGEST_INTERVAL = 86400.0
LONGEST_NAME = 255
LONGEST_PATH = 4096  # PATH_MAX
UUID_LENGTH = 36
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_ID_TEXT = f"[0-9a-f-]{{1,{UUID_LENGTH}}}"  # an id, or the start of one
SESSION_SHAPE = "claude:<session id> or codex:<thread id>"


def unix_time(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _wrong(f"not Unix seconds: {text!r}") from None
    # NaN fails both comparisons; infinity and year 10000 cannot be shown as a date.
    if not 0 <= value <= LAST_UNIX_TIME:
        raise _wrong(f"not a Unix time from 0 to year 9999: {text!r}")
    return value


def interval(text: str) -> float:
    """Seconds between two coordinator passes: more than 0, at most a day."""
    try:
        value = float(text)
    except ValueError:
        raise _wrong(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= LONGEST_INTERVAL:
        raise _wrong(f"must be more than 0 and at most {LONGEST_INTERVAL:.0f} seconds: {text!r}")
    return value


def positive_int(text: str) -> int:
    """A todo number or a count: ASCII digits, 1 or more, an integer the ledger can hold."""
    digits = text.strip()
    if re.fullmatch("[+-]?[0-9]+", digits) is None:
        raise _wrong(f"not a whole number: {text!r}")
    # Checked before int(), which refuses 4,300 digits or more in words about Python.
    if len(digits.lstrip("+-").lstrip("0")) > len(str(LARGEST_ID)) or int(digits) > LARGEST_ID:
        raise _wrong(f"too large: {digits!r}")
    if int(digits) < 1:
        raise _wrong(f"must be 1 or more: {digits!r}")
    return int(digits)


def session_ref(text: str) -> str:
    """A chat as the CLI shows it: `claude:<session id>` or `codex:<thread id>`, the
    short id a listing printed or any start of an id (at least 4 characters; the vendor
    may lead), or its name. A vendor and its id are lower-cased, a name kept as it is."""
    return _chat_reference(text, ("claude", "codex"))


def chat_id(text: str) -> str:
    """A Claude chat as `session_ref` takes one (`claude:` may lead; `codex:` may not)."""
    return _chat_reference(text, ("claude",))


def _chat_reference(text: str, vendors: tuple[str, ...]) -> str:
    from coop_engine.naming import MIN_PREFIX, VENDORS

    ref = text.strip()
    if not ref or len(ref) > LONGEST_NAME or not ref.isprintable():
        raise _wrong(
            f"a chat is named {SESSION_SHAPE}, its short id or its name "
            f"(1 to {LONGEST_NAME} printable characters), not {text!r}"
        )
    word, colon, rest = ref.partition(":")
    if not colon or re.fullmatch("[A-Za-z][A-Za-z0-9_-]*", word) is None:
        return ref  # a name, a short id, or the start of an id
    vendor, native_id = word.lower(), rest.strip().lower()
    if vendor not in VENDORS:
        if re.fullmatch(_ID_TEXT, native_id) is None:
            return ref  # a name with a colon in it
        raise _wrong(f"a chat is named {SESSION_SHAPE}, not {text!r}")
    if vendor not in vendors:
        raise _wrong(f"this command reads a Claude chat, not {text!r}")
    if re.fullmatch(_ID_TEXT, native_id) is None or len(native_id) < MIN_PREFIX:
        raise _wrong(
            f"after {vendor}: comes an id or at least {MIN_PREFIX} characters of one, not {text!r}"
        )
    return f"{vendor}:{native_id}"


def full_ref(ref: str) -> bool:
    """Whether a parsed reference is a whole `claude:<UUID>` or `codex:<UUID>`: such a
    one is taken as it is, never looked up among the chats listed."""
    return re.fullmatch(f"(claude|codex):{_UUID}", ref) is not None


def envelope_id(text: str) -> str:
    """An envelope's id (a UUID) or the start of one, as the tables show it."""
    from coop_engine.errors import ENVELOPE_ID_TOO_SHORT

    # The ledger's own rule; `resend` loads the ledger anyway.
    from coop_engine.queries.envelopes import MIN_ID_PREFIX

    wanted = text.strip().lower()
    if len(wanted) < MIN_ID_PREFIX:
        raise _wrong(ENVELOPE_ID_TOO_SHORT.format(count=MIN_ID_PREFIX))
    if len(wanted) > UUID_LENGTH or re.fullmatch("[0-9a-f-]+", wanted) is None:
        raise _wrong(
            f"an envelope id is a UUID or its start, as `coop outbox` shows it, not {text!r}"
        )
    return wanted


def host_name(text: str) -> str:
    """A fleet Mac's name as fleet.toml gives it: 1 to 255 printable characters."""
    if not text.strip() or len(text) > LONGEST_NAME or not text.isprintable():
        raise _wrong(
            f"a fleet Mac's name is 1 to {LONGEST_NAME} printable characters, not {text!r}"
        )
    return text


def home_dir(text: str) -> str:
    """The Coop home as a path: not empty (which would mean the default), not longer than a
    path can be."""
    if not text.strip() or len(text) > LONGEST_PATH:
        raise _wrong(f"a directory, 1 to {LONGEST_PATH} characters, not {text!r}")
    return text


LARGEST_PORT = 65535


def port(text: str) -> int:
    """A TCP port to listen on: 1 to 65535."""
    if re.fullmatch("[0-9]{1,5}", text.strip()) is None or not 1 <= int(text) <= LARGEST_PORT:
        raise _wrong(f"a port is a number from 1 to {LARGEST_PORT}, not {text!r}")
    return int(text)


def bind_address(text: str) -> str:
    """An IP address of this machine to listen on (IPv4, or IPv6 with or without its
    brackets), in its normal spelling."""
    import ipaddress

    bare = text.strip().removeprefix("[").removesuffix("]")
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        raise _wrong(
            f"an IP address to listen on (127.0.0.1, ::1, 0.0.0.0), not {text!r}"
        ) from None
