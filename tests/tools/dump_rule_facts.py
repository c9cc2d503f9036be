"""What the rule distiller draws from the development data, written to compare two versions
of the rules (a few minutes):

    python -m tests.tools.dump_rule_facts OUT_PREFIX

writes OUT_PREFIX.facts.jsonl (every fact `extract_facts` finds in each user message of
LoCoMo and of the LongMemEval slice's distinct haystack sessions: data set, session,
message, content, slot) and OUT_PREFIX.topics.jsonl (each session's episode topics, as
`distill_session` gives them). Run it on two checkouts and diff the files; check the new
facts by hand.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from mnemoproxy.memory.distill.rules import distill_session, extract_facts
from mnemoproxy.memory.models import SessionInput, Turn
from tests.support.data import locomo, longmemeval


def _sessions() -> list[tuple[str, str, SessionInput]]:
    """(data set, session id, the session as turns), LoCoMo's messages paired into turns."""
    found = []
    for sample in locomo.load():
        for session in sample.sessions:
            said = session.turns
            turns = [Turn(said[i].text, said[i + 1].text) for i in range(0, len(said) - 1, 2)]
            found.append(("locomo", f"{sample.sample_id}:{session.number}",
                          SessionInput("dev", "dev", turns)))
    seen: set[str] = set()
    for question in longmemeval.load():
        for lme_session in question.sessions:
            if lme_session.session_id not in seen:
                seen.add(lme_session.session_id)
                turns = [Turn(u, a) for u, a in lme_session.exchanges()]
                found.append(("longmemeval", lme_session.session_id,
                              SessionInput("dev", "dev", turns)))
    return found


def _user_messages() -> list[tuple[str, str, str]]:
    """(data set, session id, message): every LoCoMo message (each is a person speaking of
    themselves) and the user's side of the LongMemEval sessions."""
    messages = [("locomo", f"{sample.sample_id}:{session.number}", turn.text)
                for sample in locomo.load() for session in sample.sessions
                for turn in session.turns]
    seen: set[str] = set()
    for question in longmemeval.load():
        for lme_session in question.sessions:
            if lme_session.session_id not in seen:
                seen.add(lme_session.session_id)
                messages += [("longmemeval", lme_session.session_id, user)
                             for user, _ in lme_session.exchanges() if user.strip()]
    return messages


def main(prefix: str) -> None:
    if not (locomo.available() and longmemeval.available()):
        sys.exit(locomo.unavailable_message())
    messages = _user_messages()
    with Path(f"{prefix}.facts.jsonl").open("w") as out:
        for data, session, text in messages:
            for fact in extract_facts(text):
                out.write(json.dumps({"data": data, "session": session, "message": text,
                                      "content": fact.content, "slot": fact.slot}) + "\n")
    started = time.process_time()
    sessions = _sessions()
    with Path(f"{prefix}.topics.jsonl").open("w") as out:
        for data, session_id, session in sessions:
            episode = distill_session(session).episode
            out.write(json.dumps({"data": data, "session": session_id,
                                  "topics": episode.topics if episode else None}) + "\n")
    print(f"{len(messages)} user messages, {len(sessions)} sessions distilled in "
          f"{time.process_time() - started:.1f} s of CPU")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "rule-facts")
