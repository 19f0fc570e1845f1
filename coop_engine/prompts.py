"""The words Coop puts in front of a chat (invitations, work, second attempts, the
chief's review) and the command lines they name."""

from __future__ import annotations

CLI_TAKE_OPENING = (
    "You took this work yourself through the Coop CLI, and Coop now follows this chat "
    "for it: the binding below is yours already, nothing new is being assigned."
)


def _todo_lines(todo_id: int, title: str, body: str) -> list[str]:
    lines = [f"Todo #{todo_id}: {title}"]
    if body:
        lines.append(body)
    return lines


def invitation(todo_id: int, title: str, body: str, nonce: str) -> str:
    """An invitation: what the todo is, and the literal answer that takes it."""
    return "\n".join(
        [
            f"Coop invites you to todo #{todo_id}: {title}",
            *([body] if body else []),
            f"To take it, end your reply with: COOP_ACCEPT {nonce}",
            f"To pass, end your reply with: COOP_DECLINE {nonce}",
        ]
    )


def work(todo_id: int, title: str, body: str) -> str:
    """The work envelope that follows an accepted invitation."""
    return "\n".join(
        [
            *_todo_lines(todo_id, title, body),
            "It is yours now. When it is done, report the outcome with:",
            f'coop todo report {todo_id} --outcome "<what happened>" --by worker',
        ]
    )


def cli_take_work(todo_id: int, title: str, body: str) -> str:
    """The work envelope an adopted CLI taker receives (seed 003's opening sentence)."""
    return "\n".join([CLI_TAKE_OPENING, "", work(todo_id, title, body)])


def legacy_review(
    todo_id: int, title: str, taken: str, by: str, host: str, since: list[str], obligation: int
) -> str:
    """The chief's review of a legacy take, three hours on (seed 003): what Coop knows,
    and the three decisions the chief may record."""
    return "\n".join(
        [
            f"Coop asks the chief to review a legacy take of todo #{todo_id}: {title}",
            f"It was taken through the Coop CLI at {taken} by {by} on {host}, and has no"
            " outcome three hours later.",
            "What Coop knows since:",
            *[f"- {line}" for line in since],
            "Decide its outcome when you can, with:",
            f'coop todo report {todo_id} --outcome "<what happened>" --by chief',
            "Or, if the work goes on:",
            review_command(obligation, "chief", "wait"),
            f"Or, if nobody does it (todo #{todo_id} is open again):",
            review_command(obligation, "chief", "release"),
        ]
    )


def review_command(obligation: int, by: str, decision: str = "wait|release") -> str:
    """The command line that records a decision on an overdue obligation."""
    return f"coop obligation review {obligation} --decision {decision} --by {by}"


ORDINALS = {2: "Second", 3: "Third", 4: "Fourth", 5: "Fifth"}


def another_attempt(attempt: int, previous_id: str, reason: str, original: str) -> str:
    """A resent envelope says which attempt it is and why, so its body never equals an
    earlier one's (receivers drop an identical body from the same sender)."""
    ordinal = ORDINALS.get(attempt, f"{attempt}th")
    return (
        f"{ordinal} attempt: the previous message ({previous_id}) was not delivered "
        f"({reason}).\n{original}"
    )
