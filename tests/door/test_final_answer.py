"""An invitation's answer is its turn's final: the last main-chain assistant text before
the turn ends (DESIGN 5.5). A subagent's (sidechain) text is never the chat's answer,
whatever nonce it quotes."""

from __future__ import annotations

import json
from typing import Any

from coop_engine import receipts

NONCE = "n7Qk2xVb9"


def _line(entry: dict[str, Any]) -> str:
    return json.dumps(entry)


def _said(text: str, sidechain: bool = False) -> str:
    message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    return _line({"type": "assistant", "isSidechain": sidechain, "message": message})


def test_a_sidechain_text_after_the_main_chain_final_is_not_the_answer() -> None:
    lines = [
        _said("I will read the importer first."),
        _said(f"Subagent: COOP_ACCEPT {NONCE}", sidechain=True),
        _line({"type": "system", "subtype": "turn_duration", "isSidechain": True}),
        _line({"type": "system", "subtype": "turn_duration"}),
    ]
    (final,) = receipts.finals(list(enumerate(lines)))
    assert final.text == "I will read the importer first."
    assert (final.offset, final.end) == (0, 3)
    assert receipts.answer_in(final.text, NONCE) is None
