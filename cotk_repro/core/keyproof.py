"""The text a key signs to prove its holder registers it on a dashboard (proof of possession).

A dashboard registers an SSH key to a user only with an SSHSIG signature, in the namespace
``cotk-repro-key-registration``, over a challenge it issued to that user: one fresh nonce, the
dashboard's origin, the user's name and an expiry. The dashboard rebuilds this text from what it stored
(so a signature over another nonce, user or dashboard fails), and the client checks the text names the
dashboard it talks to and the user it logged in as before signing anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import CotkError

NS_KEY_REGISTRATION = "cotk-repro-key-registration"
HEADER = "cotk-repro key registration challenge"
_LINE = re.compile(r"^(dashboard|user|nonce|expires): ([\x21-\x7e]{1,300})$")


class ChallengeError(CotkError):
    """A challenge text that is not one this toolkit writes, or that names another dashboard or user."""


@dataclass(frozen=True)
class Challenge:
    """One registration challenge: the dashboard origin, the user, the single-use nonce and its expiry (ISO)."""

    dashboard: str
    user: str
    nonce: str
    expires: str

    def text(self) -> str:
        """The exact bytes (as text) the key signs: a header line and one ``field: value`` line each."""
        return (
            f"{HEADER}\ndashboard: {self.dashboard}\nuser: {self.user}\nnonce: {self.nonce}\nexpires: {self.expires}\n"
        )


def parse_challenge(text: object) -> Challenge:
    """The challenge in ``text`` (as :meth:`Challenge.text` writes it); raises :class:`ChallengeError`."""
    if not isinstance(text, str) or len(text) > 2000:
        raise ChallengeError("the dashboard's key registration challenge is not text of at most 2000 characters")
    lines = text.split("\n")
    if len(lines) != 6 or lines[0] != HEADER or lines[5] != "":
        raise ChallengeError("the dashboard's key registration challenge is not in the form this version writes")
    fields = {}
    for line in lines[1:5]:
        m = _LINE.match(line)
        if m is None or m.group(1) in fields:
            raise ChallengeError("the dashboard's key registration challenge holds an unexpected line")
        fields[m.group(1)] = m.group(2)
    challenge = Challenge(
        fields.get("dashboard", ""), fields.get("user", ""), fields.get("nonce", ""), fields.get("expires", "")
    )
    if challenge.text() != text:
        raise ChallengeError("the dashboard's key registration challenge is not in the form this version writes")
    return challenge


def check_challenge(text: object, *, dashboard: str, user: str) -> Challenge:
    """The challenge in ``text`` when it names ``dashboard`` (an origin) and ``user``; raises
    :class:`ChallengeError` otherwise (a dashboard relaying another dashboard's challenge to get it signed)."""
    challenge = parse_challenge(text)
    if challenge.dashboard.rstrip("/") != dashboard.rstrip("/"):
        raise ChallengeError(
            f"the key registration challenge names the dashboard {challenge.dashboard}, not "
            f"{dashboard.rstrip('/')}: refusing to sign it (another site may be relaying it)"
        )
    if challenge.user != user:
        raise ChallengeError(
            f"the key registration challenge names the user {challenge.user!r}, not {user!r}: refusing to sign it"
        )
    return challenge
