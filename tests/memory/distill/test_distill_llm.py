"""LLMDistiller against a scripted fake core model, the secret filter, and the circuit breaker."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
import pytest

from mnemoproxy.errors import DistillError, UpstreamError, UpstreamTimeout
from mnemoproxy.memory.core_model.breaker import CircuitBreaker
from mnemoproxy.memory.distill.llm import CHARS_PER_TOKEN, LLMDistiller
from mnemoproxy.memory.distill.parse import DISTILLATION_SCHEMA
from mnemoproxy.memory.distill.protocol import Distiller
from mnemoproxy.memory.models import SessionInput, Turn
from mnemoproxy.memory.write import redact
from mnemoproxy.memory.write.redact import looks_like_secret, redact_secrets
from tests.support.servers.fake_core_model import FakeCoreModel


def reply(**overrides: Any) -> str:
    body: dict[str, Any] = {
        "episode": {
            "summary": "User said they moved to Paris on 2024-05-06.",
            "topics": ["moving"],
            "entities": ["Paris"],
            "decisions": [],
            "action_items": ["Register at the town hall by 2024-05-17"],
            "salience": 0.8,
        },
        "pinned_candidates": [
            {"content": "User prefers window seats", "salience": 0.6, "tags": ["preference"]}
        ],
        "identity_facts": ["User lives in Paris"],
    }
    body.update(overrides)
    return json.dumps(body)


def session(**overrides: Any) -> SessionInput:
    fields: dict[str, Any] = {
        "agent_id": "agent-1",
        "session_id": "sess-1",
        "turns": [
            Turn("I moved to Paris yesterday!", "Congratulations!", datetime(2024, 5, 7, 9, 30)),
            Turn("I need to register by next Friday.", "Noted."),
            Turn("On the train I prefer window seats. I work at Acme, in dark mode all day.",
                 "Good to know. Do you use a password manager?"),
            Turn("Yes, my password manager is 1Password.", "Great choice."),
        ],
        "session_date": datetime(2024, 5, 7, 9, 0),
        "known_identity": ["User lives in Berlin", "User's name is Ana"],
        "recent_episodes": ["User planned a move abroad."],
    }
    fields.update(overrides)
    return SessionInput(**fields)


async def test_prompt_carries_date_turns_known_facts_and_instructions() -> None:
    core = FakeCoreModel(reply())
    await LLMDistiller(core).distill(session())
    prompt = core.prompt
    assert "2024-05-07 (Tuesday)" in prompt
    assert "2024-05-07 09:30 (Tuesday)" in prompt  # the first turn's own timestamp
    assert "I moved to Paris yesterday!" in prompt and "Congratulations!" in prompt
    assert "I need to register by next Friday." in prompt
    assert "User lives in Berlin" in prompt and "User's name is Ana" in prompt
    assert "User planned a move abroad." in prompt
    assert "relative dates" in prompt.lower() and "absolute dates" in prompt.lower()
    assert "do not repeat them" in prompt
    assert "passwords, API keys" in prompt
    assert [m["role"] for m in core.calls[0]["messages"]] == ["system", "user"]


async def test_requests_json_with_the_schema_and_the_timeout() -> None:
    core = FakeCoreModel(reply())
    await LLMDistiller(core, timeout=12.5, max_tokens=900).distill(session())
    call = core.calls[0]
    assert call["json_schema"] == DISTILLATION_SCHEMA
    assert call["timeout"] == 12.5
    assert call["max_tokens"] == 900
    episode_schema = DISTILLATION_SCHEMA["properties"]["episode"]
    assert set(episode_schema["required"]) == {
        "summary",
        "topics",
        "entities",
        "decisions",
        "action_items",
        "salience",
    }


async def test_the_system_message_does_not_depend_on_the_session() -> None:
    distiller = LLMDistiller(FakeCoreModel())
    first = distiller.render_messages(session())
    second = distiller.render_messages(session(turns=[Turn("hi", "hello")], known_identity=[]))
    assert first[0] == second[0]
    assert first[1] != second[1]


async def test_without_a_session_date_the_first_turn_timestamp_is_used() -> None:
    distiller = LLMDistiller(FakeCoreModel())
    prompt = distiller.render_messages(session(session_date=None))[1]["content"]
    assert "Session date: 2024-05-07 (Tuesday)" in prompt
    undated = session(session_date=None, turns=[Turn("hi", "hello")])
    assert "Session date: unknown" in distiller.render_messages(undated)[1]["content"]


async def test_template_syntax_in_turns_is_data_and_long_turns_are_cut() -> None:
    distiller = LLMDistiller(FakeCoreModel(), max_turn_chars=50, max_reply_chars=20)
    turns = [Turn("{{ secret_var }} {% if x %}", "a" * 200), Turn("u" * 200, "ok")]
    prompt = distiller.render_messages(session(turns=turns))[1]["content"]
    assert "{{ secret_var }} {% if x %}" in prompt
    assert "a" * 20 + " … [truncated]" in prompt and "a" * 21 not in prompt
    assert "u" * 50 + " … [truncated]" in prompt and "u" * 51 not in prompt


async def test_a_session_longer_than_the_context_is_distilled_in_parts() -> None:
    turns = [Turn(f"I visited city number {n}. " + "It was lovely. " * 60, "Nice!")
             for n in range(12)]
    per_part = reply(
        episode={
            "summary": "User visited a city and it was lovely.",
            "topics": ["travel"],
            "salience": 0.4,
        },
        pinned_candidates=[], identity_facts=[],
    )
    core = FakeCoreModel(*[per_part] * 12)
    distiller = LLMDistiller(core, context_tokens=4096, max_tokens=1024)
    parts = distiller.parts(session(turns=turns))
    assert len(parts) > 1 and [t for part in parts for t in part] == turns
    result = await distiller.distill(session(turns=turns))
    assert len(core.calls) == len(parts)
    for call in core.calls:  # each prompt fits the context with room for the answer
        chars = sum(len(m["content"]) for m in call["messages"])
        assert chars <= (4096 - 1024) * CHARS_PER_TOKEN
    assert result.episode is not None and result.episode.topics == ["travel"]
    assert result.episode.summary.count("User visited a city and it was lovely.") == len(parts)


@pytest.mark.parametrize("wrap", [lambda t: t, lambda t: f"Here it is:\n```json\n{t}\n```"])
async def test_returns_the_parsed_distillation(wrap: Any) -> None:
    distiller: Distiller = LLMDistiller(FakeCoreModel(wrap(reply())))
    result = await distiller.distill(session())
    assert result.episode is not None
    assert result.episode.summary == "User said they moved to Paris on 2024-05-06."
    assert result.episode.action_items == ["Register at the town hall by 2024-05-17"]
    assert [(f.content, f.kind) for f in result.pinned] == [("User prefers window seats", "pinned")]
    assert [(f.content, f.kind) for f in result.identity] == [("User lives in Paris", "identity")]


async def test_garbage_raises_distill_error_after_one_attempt() -> None:
    core = FakeCoreModel("Sorry, I can't do that.", reply())
    with pytest.raises(DistillError, match="no JSON object"):
        await LLMDistiller(core).distill(session())
    assert len(core.calls) == 1


@pytest.mark.parametrize("error", [UpstreamTimeout("slow"), UpstreamError("down")])
async def test_core_model_failures_propagate_unchanged(error: UpstreamError) -> None:
    core = FakeCoreModel(error)
    with pytest.raises(type(error)) as caught:
        await LLMDistiller(core).distill(session())
    assert caught.value is error
    assert len(core.calls) == 1


async def test_a_core_model_that_ignores_its_timeout_is_cut_off() -> None:
    core = FakeCoreModel(reply(), delay=5.0)
    distiller = LLMDistiller(core, timeout=0.05)
    with pytest.raises(UpstreamTimeout, match="sess-1"):
        await distiller.distill(session())


async def test_a_session_without_text_is_not_sent() -> None:
    core = FakeCoreModel()
    result = await LLMDistiller(core).distill(session(turns=[Turn("  ", "")]))
    assert result.episode is None and result.pinned == [] and result.identity == []
    assert core.calls == []


async def test_secrets_are_dropped_from_facts_and_redacted_from_the_summary() -> None:
    aws_key = "AKIAIOSFODNN7EXAMPLE"
    openai_key = "sk-proj-" + "Ab3dE" * 8
    core = FakeCoreModel(
        reply(
            episode={
                "summary": f"User set up deploys with key {aws_key} and likes dark mode.",
                "decisions": [f"Use {openai_key} for the bot", "Deploy on Fridays"],
                "salience": 0.5,
            },
            pinned_candidates=[
                {"content": "User's wifi password: hunter2!", "salience": 0.9},
                {"content": f"User's OpenAI key is {openai_key}", "salience": 0.9},
                {"content": "User's GitHub token is ghp_" + "x1Y2z3" * 6},
                {"content": "User prefers dark mode", "salience": 0.5},
                {"content": "User's password manager is 1Password", "salience": 0.4},
            ],
            identity_facts=[
                "User works at Acme",
                "User's login token Zx8Qw2Lk9Vb3Np7Rt5Ym1Hc6Jd4Fg0Ss",
            ],
        )
    )
    deploys = Turn("I set up the deploys with my key today; I like dark mode.", "Done.")
    result = await LLMDistiller(core).distill(session(turns=[*session().turns, deploys]))
    assert [f.content for f in result.pinned] == [
        "User prefers dark mode",
        "User's password manager is 1Password",
    ]
    assert [f.content for f in result.identity] == ["User works at Acme"]
    assert result.episode is not None
    assert aws_key not in result.episode.summary
    assert "[redacted]" in result.episode.summary and "dark mode" in result.episode.summary
    assert result.episode.decisions == ["Deploy on Fridays"]


@pytest.mark.parametrize(
    "text",
    [
        "sk-" + "a1B2c3D4" * 4,
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_" + "a1B2" * 9,
        "github_pat_" + "A1b2C3d4E5" * 3,
        "xoxb-123456789012-abcdefABCDEF",
        "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6q",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        "-----BEGIN RSA PRIVATE KEY-----",
        "password: hunter2",
        "My API key is abc123xyz",
        "api_key=abc123xyz",
        "Authorization: Bearer abcdefghijklmnop1234",
        "token f49cdebf5ea350bb4f7f10d018dfd90184e5c7cc",
        "value Zx8Qw2Lk9Vb3Np7Rt5Ym1Hc6Jd4Fg0SsQq",
    ],
)
def test_looks_like_secret_catches_common_credentials(text: str) -> None:
    assert looks_like_secret(text)


@pytest.mark.parametrize(
    "text",
    [
        "User lives in Berlin",
        "User's password manager is 1Password",
        "The API key is stored in Vault",
        "User's secret is that they love ABBA",
        "User skis; sk-8 is their skate shop",
        "release-2024-07-15-hotfix-for-login-service-v2",
        "User runs Qwen2.5-Coder-32B-Instruct-GPTQ-Int4-AWQ locally",
        "https://example.com/2024/07/15/my-blog-post-about-things",
        "internationalization_and_localization_guidelines",
    ],
)
def test_looks_like_secret_spares_ordinary_text(text: str) -> None:
    assert not looks_like_secret(text)


def test_redaction_keeps_the_label() -> None:
    assert redact_secrets("wifi password: hunter2 at home") == "wifi password: [redacted] at home"


def test_redaction_keeps_the_punctuation_around_a_secret() -> None:
    assert redact_secrets("My password is hunter2xyz. Thanks!") == (
        "My password is [redacted]. Thanks!")
    assert redact_secrets("(api key = abc123def)") == "(api key = [redacted])"
    assert redact_secrets('The PIN code is "4821".') == 'The PIN code is [redacted].'
    assert redact_secrets("Bearer abcdefghijklmnop1234") == "Bearer [redacted]"


@pytest.mark.parametrize("text", [
    "My PIN code is 4821 and my pın code: 9911", "PASSWORD=Tr0ub4dor&3x", "paſsword: hunter22",
    "the API KEY is abc123xyz", "ACCESS-TOKEN: qwertyuiop", "Client Secret = s3cr3tv4lue",
    "BEARER abcdefghijklmnop1234", "key sk-abcdefghijklmnopqrstu and AKIAABCDEFGHIJKLMNOP",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789 -----BEGIN RSA PRIVATE KEY-----",
    "I went hiking with Maria last weekend; it cost about 40 euros.",
])
def test_quick_checks_never_spare_what_the_patterns_catch(text: str) -> None:
    # The same redaction without the substring checks that skip the patterns.
    reference = redact._KEY_FORMATS.sub(redact.REDACTED, text)
    reference = redact._LABELLED_SECRET.sub(redact._redact_value, reference)
    reference = redact._TOKEN_RUN.sub(
        lambda m: redact.REDACTED if redact._is_random_token(m[0]) else m[0], reference)
    assert redact_secrets(text) == reference
    assert looks_like_secret(text) == (reference != text)


def test_missing_template_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(jinja2.TemplateNotFound):
        LLMDistiller(FakeCoreModel(), templates_dir=tmp_path)


def test_templates_are_strict_about_undefined_variables(tmp_path: Path) -> None:
    (tmp_path / "distill_system.j2").write_text("system")
    (tmp_path / "distill_user.j2").write_text("{{ no_such_variable }}")
    distiller = LLMDistiller(FakeCoreModel(), templates_dir=tmp_path)
    with pytest.raises(jinja2.UndefinedError):
        distiller.render_messages(session())


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_breaker_opens_after_consecutive_failures_only() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=3, cooldown_seconds=30, clock=clock)
    breaker.record_failure()
    breaker.record_failure()
    breaker.record_success()  # a success resets the count
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state == "closed" and breaker.allow()
    breaker.record_failure()
    assert breaker.state == "open"
    assert not breaker.allow()
    assert breaker.retry_in == 30


def test_breaker_half_opens_after_cooldown_and_closes_on_success() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, cooldown_seconds=30, clock=clock)
    breaker.record_failure()
    clock.now += 29.9
    assert breaker.state == "open" and not breaker.allow()
    clock.now += 0.1
    assert breaker.state == "half_open" and breaker.retry_in == 0
    assert breaker.allow()  # the probe
    assert not breaker.allow()  # only one probe at a time
    breaker.record_success()
    assert breaker.state == "closed" and breaker.allow() and breaker.allow()


def test_breaker_reopens_when_the_probe_fails() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=5, cooldown_seconds=30, clock=clock)
    for _ in range(5):
        breaker.record_failure()
    clock.now += 30
    assert breaker.allow()
    breaker.record_failure()  # one failed probe is enough; no new run of five needed
    assert breaker.state == "open" and not breaker.allow()
    assert breaker.retry_in == 30


def test_breaker_lets_a_new_probe_through_when_one_is_never_reported() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, cooldown_seconds=10, clock=clock)
    breaker.record_failure()
    clock.now += 10
    assert breaker.allow()
    clock.now += 5
    assert not breaker.allow()
    clock.now += 5
    assert breaker.allow()


def test_breaker_defaults_and_validation() -> None:
    breaker = CircuitBreaker()
    assert (breaker.failure_threshold, breaker.cooldown_seconds) == (5, 30.0)
    assert breaker.state == "closed"
    with pytest.raises(ValueError):
        CircuitBreaker(failure_threshold=0)
