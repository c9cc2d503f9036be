"""The web inspector (/ui) in a real browser: Debian's chromium driven by Playwright against a
real proxy on loopback. On failure pytest-playwright keeps a screenshot under
test-results/ (`--screenshot only-on-failure`, set in pyproject.toml)."""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from mnemoproxy.proxy.keys import KeyFile
from tests.memory_client import memory_settings
from tests.proxy_server import ProxyServer


def chromium() -> str:
    found = os.environ.get("MNEMO_CHROMIUM") or shutil.which("chromium") or shutil.which(
        "chromium-browser")
    if not found:
        pytest.fail("no chromium on PATH: `make test` installs Debian's (apt-get install "
                    "chromium), or point MNEMO_CHROMIUM at one")
    return found


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """The system's chromium: Playwright's own browser download is not used."""
    return {**browser_type_launch_args, "executable_path": chromium()}


def ingest(url: str, agent: str, conversation: str, user: str, date: str,
           headers: dict[str, str] | None = None) -> None:
    answer = httpx.post(url + "/memory/ingest", headers=headers, json={
        "agent_id": agent, "conversation_id": conversation, "session_date": date,
        "turns": [{"user": user, "assistant": "Noted."}]})
    assert answer.status_code == 200, answer.text


def test_looking_at_and_fixing_memory_in_a_browser(page: Page, memory_proxy: ProxyServer):
    url = memory_proxy.url
    ingest(url, "alice", "intro", "I am Alice, I work at Acme as a data engineer. "
           "My cat is called Mia.", "2024-05-08")
    ingest(url, "alice", "trip", "I am flying to Lisbon on Friday for a conference.",
           "2024-06-02")

    page.goto(url + "/ui")
    expect(page.locator("#agents")).to_contain_text("alice")
    page.get_by_role("link", name="alice").click()
    expect(page.locator("h1")).to_have_text("alice")
    expect(page.locator("table.facts").first).to_contain_text("User has a cat named Mia")
    expect(page.locator("#sessions")).to_contain_text("trip")

    # Search shows each result's score components.
    page.get_by_placeholder("search this memory").fill("Lisbon conference")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#results")).to_contain_text("flying to Lisbon")
    expect(page.locator("#results")).to_contain_text("bm25")

    # The preview shows the block a message would get.
    page.go_back()
    page.get_by_placeholder("a message to the model").fill("what is my cat called?")
    page.get_by_role("button", name="Preview what is injected").click()
    expect(page.locator("#block")).to_contain_text("Mia")

    # Add a fact, pin it, edit it (the old text stays as history), delete it.
    page.goto(url + "/ui/agents/alice")
    page.locator("summary", has_text="Add a fact").click()
    page.locator("textarea[name=content]").fill("User's passport expires in 2031.")
    page.get_by_role("button", name="Add fact").click()
    expect(page.get_by_role("status")).to_have_text("Fact added.")
    row = page.locator("tr", has_text="User's passport expires in 2031.")
    row.get_by_role("button", name="Pin").click()
    expect(page.get_by_role("status")).to_contain_text("Fact pinned")
    expect(page.locator("tr", has_text="passport")).to_contain_text("pinned")
    page.get_by_role("link", name="User's passport expires in 2031.").click()
    page.locator("textarea[name=content]").fill("User's passport expires in 2033.")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Fact saved.")
    expect(page.locator("#content")).to_have_text("User's passport expires in 2033.")
    expect(page.locator("#history")).to_contain_text("2031")
    page.get_by_role("link", name="Delete this fact…").click()
    expect(page.locator("h1")).to_have_text("Delete this fact?")
    page.get_by_role("button", name="Delete fact").click()
    expect(page.get_by_role("status")).to_contain_text("Fact deleted")
    facts = httpx.get(url + "/agents/alice/facts").json()["facts"]
    assert not any("passport" in f["content"] for f in facts)

    # Forgetting a session asks first; cancelling keeps it.
    page.locator("#sessions tr", has_text="trip").get_by_role("link", name="Forget").click()
    expect(page.locator("h1")).to_contain_text("Forget session")
    page.get_by_role("link", name="Cancel").click()
    expect(page.locator("h1")).to_contain_text("Session")
    assert len(httpx.get(url + "/agents/alice/sessions").json()["sessions"]) == 2
    page.get_by_role("link", name="Forget this session…").click()
    page.get_by_role("button", name="Forget session").click()
    expect(page.get_by_role("status")).to_have_text("Session forgotten.")
    expect(page.locator("#sessions")).not_to_contain_text("trip")

    page.get_by_role("button", name="Consolidate now").click()
    expect(page.get_by_role("status")).to_have_text("Consolidation ran.")

    page.get_by_role("link", name="Forget this agent…").click()
    page.get_by_role("button", name="Forget agent").click()
    expect(page.get_by_role("status")).to_have_text("Agent forgotten.")
    expect(page.locator("main")).not_to_contain_text("alice")
    assert httpx.get(url + "/agents/alice").status_code == 404

    log = page.goto(url + "/ui/agents/alice")
    assert log is not None and log.status == 404  # an error page, not JSON
    expect(page.locator("[role=alert]")).to_contain_text("alice")


def test_the_inspector_signs_in_with_a_key_and_shows_only_its_agents(page: Page, fake_upstream,
                                                                      tmp_path):
    keys = KeyFile(tmp_path / "keys.json")
    _, admin = keys.add(agents=None, admin=True)
    _, dana_key = keys.add(agents=("dana",), admin=False)
    _, chat_only = keys.add(agents=(), admin=False)
    settings = memory_settings(fake_upstream, tmp_path, keys_file=str(keys.path))
    with ProxyServer(settings) as server:
        url = server.url
        for agent in ("dana", "erin"):
            ingest(url, agent, "c1", f"My name is {agent.title()}.", "2024-05-08",
                   headers={"Authorization": f"Bearer {admin}"})

        page.goto(url + "/ui")
        expect(page).to_have_url(re.compile(r"/ui/login$"))
        for wrong in ("mp-not-a-key", chat_only):
            page.get_by_label("API key").fill(wrong)
            page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_role("alert")).to_contain_text("not accepted")

        page.get_by_label("API key").fill(dana_key)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#agents")).to_contain_text("dana")
        expect(page.locator("#agents")).not_to_contain_text("erin")
        refused = page.goto(url + "/ui/agents/erin")
        assert refused is not None and refused.status == 403
        page.goto(url + "/ui/agents/dana")
        expect(page.locator("h1")).to_have_text("dana")
        # The cookie opens the inspector's pages only, not the JSON routes.
        assert page.request.get(url + "/agents/dana").status == 401

        page.get_by_role("button", name="Sign out").click()
        expect(page).to_have_url(re.compile(r"/ui/login$"))
        page.goto(url + "/ui/agents/dana")
        expect(page).to_have_url(re.compile(r"/ui/login$"))


def test_inspector_forms_are_refused_from_other_sites_and_pages_run_no_script(memory_proxy):
    url = memory_proxy.url
    ingest(url, "alice", "c1", "My cat is called Mia.", "2024-05-08")
    form = {"content": "User is evil.", "kind": "pinned"}
    cross_site = httpx.post(url + "/ui/agents/alice/facts", data=form,
                            headers={"Origin": "http://evil.example"})
    assert cross_site.status_code == 403
    same_site = httpx.post(url + "/ui/agents/alice/facts", data=form,
                           headers={"Origin": url})
    assert same_site.status_code == 303
    assert httpx.post(url + "/agents/alice/facts", data=form).status_code == 415  # JSON only
    page = httpx.get(url + "/ui/agents/alice")
    assert "script-src" not in page.headers["content-security-policy"]
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "<script" not in page.text
    bad = httpx.post(url + "/ui/agents/alice/facts", data={"content": "x", "salience": "2"})
    assert bad.status_code == 400 and "salience" in bad.text
    assert httpx.post(url + "/ui/agents/alice/facts", data={"content": " "}).status_code == 400
    missing = httpx.get(url + "/ui/agents/alice/facts/99999999999999999999")
    assert missing.status_code in (400, 404)


def test_no_inspector_page_or_form_reaches_another_agents_memory(fake_upstream, tmp_path):
    keys = KeyFile(tmp_path / "keys.json")
    _, admin = keys.add(agents=None, admin=True)
    _, dana_key = keys.add(agents=("dana",), admin=False)
    settings = memory_settings(fake_upstream, tmp_path, keys_file=str(keys.path))
    from mnemoproxy.proxy.app import create_app

    pages = sorted({(route.path, method) for route in create_app(settings).routes
                    if route.path.startswith("/ui/agents/")
                    for method in route.methods if method in ("GET", "POST")})
    assert len(pages) >= 15  # every page and form of an agent, found from the app itself
    with ProxyServer(settings) as server:
        url = server.url
        ingest(url, "erin", "c1", "My name is Erin. My cat is called Mia.", "2024-05-08",
               headers={"Authorization": f"Bearer {admin}"})
        before = httpx.get(url + "/agents/erin/export",
                           headers={"Authorization": f"Bearer {admin}"}).text
        as_dana = httpx.Client(base_url=url, cookies={"mnemoproxy_key": dana_key},
                               headers={"Origin": url})
        for path, method in pages:
            concrete = re.sub(r"\{agent_id[^}]*\}", "erin", path)
            concrete = re.sub(r"\{\w+:int\}", "1", concrete)
            answer = as_dana.request(method, concrete, params={"q": "cat", "message": "cat"},
                                     data={"content": "x"} if method == "POST" else None)
            assert answer.status_code == 403, (method, concrete, answer.status_code)
        after = httpx.get(url + "/agents/erin/export",
                          headers={"Authorization": f"Bearer {admin}"}).text
        assert after == before
