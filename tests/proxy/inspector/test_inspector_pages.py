"""The web inspector (/ui) in a real browser: Debian's chromium driven by Playwright against a
real proxy on loopback, and its forms and pages over plain HTTP. A failing browser test
leaves a screenshot of its page in test-results/."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, async_playwright, expect

from mnemoproxy.proxy.edge.keys import KeyFile
from mnemoproxy.proxy.edge.sessions import InspectorSessions
from tests.support.memory_client import memory_settings
from tests.support.servers.proxy_server import ProxyServer

SCREENSHOTS = Path(__file__).resolve().parents[3] / "test-results"


def chromium() -> str:
    found = os.environ.get("MNEMO_CHROMIUM") or shutil.which("chromium") or shutil.which(
        "chromium-browser")
    if not found:
        pytest.fail("no chromium on PATH: `make test` installs Debian's (apt-get install "
                    "chromium), or point MNEMO_CHROMIUM at one")
    return found


@pytest.fixture
async def page(request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A page in the system's chromium (Playwright's own browser download is not used), with
    the async API: it shares the test's event loop, where the sync API would hold one open
    for the rest of the session."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium())
        opened = await browser.new_page()
        yield opened
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            SCREENSHOTS.mkdir(exist_ok=True)
            await opened.screenshot(path=SCREENSHOTS / f"{request.node.name}.png",
                                    full_page=True)
        await browser.close()


def ingest(url: str, agent: str, conversation: str, user: str, date: str,
           headers: dict[str, str] | None = None, title: str = "") -> None:
    # Ingest waits for distillation: seconds on a loaded machine, past httpx's default 5.
    answer = httpx.post(url + "/memory/ingest", headers=headers, timeout=30, json={
        "agent_id": agent, "conversation_id": conversation, "session_date": date,
        "title": title, "turns": [{"user": user, "assistant": "Noted."}]})
    assert answer.status_code == 200, answer.text


def seed(url: str) -> None:
    """alice: two conversations (one with a title, one with a very long unbroken word), a
    document, a procedure."""
    ingest(url, "alice", "intro", "I am Alice, I work at Acme as a data engineer. "
           "My cat is called Mia.", "2024-05-08")
    ingest(url, "alice", "trip", "I am flying to Lisbon on Friday for a conference: "
           "https://example.com/" + "agenda" * 60, "2024-06-02", title="Lisbon trip")
    manual = b"# Kettle\n\n## Care\n\nDescale the kettle every 6 weeks with citric acid."
    httpx.post(url + "/agents/alice/documents", files={
        "file": ("kettle.md", manual, "text/markdown")}).raise_for_status()
    httpx.post(url + "/agents/alice/procedures", json={
        "name": "Weekly backup", "applies_when": "on Fridays",
        "steps": ["Plug in the disk", "Run the backup script"]}).raise_for_status()


async def test_looking_at_and_fixing_memory_in_a_browser(page: Page, memory_proxy: ProxyServer):
    url = memory_proxy.url
    seed(url)

    await page.goto(url + "/ui")
    await expect(page.locator("#agents")).to_contain_text("alice")
    await page.get_by_role("link", name="alice").click()
    await expect(page.locator("h1")).to_have_text("alice")
    await expect(page.locator("#identity")).to_contain_text("User has a cat named Mia")
    # The agent's page is in tabs, each with its count.
    tabs = page.locator("nav.tabs")
    for label in ("Overview", "Facts", "Episodes 2", "Sessions 2", "Documents 1",
                  "Procedures 1"):
        await expect(tabs).to_contain_text(label)

    # Sessions are named by their title, else their first user line; a session's page
    # shows its conversation and what memory drew from it.
    await tabs.get_by_role("link", name="Sessions").click()
    await expect(page.locator("#sessions")).to_contain_text("Lisbon trip")
    await expect(page.locator("#sessions")).to_contain_text("I am Alice, I work at Acme")
    await page.get_by_role("link", name="Lisbon trip").click()
    await expect(page.locator("h1")).to_have_text("Lisbon trip")
    await expect(page.locator("#transcript")).to_contain_text("flying to Lisbon")
    await expect(page.locator("#distilled h3").first).to_have_text("Episode")

    # Search: each result explained in words and linked to where it came from.
    await page.goto(url + "/ui/agents/alice")
    await page.get_by_placeholder("search this memory").fill("Lisbon conference")
    await page.get_by_role("button", name="Search").click()
    first = page.locator("#results > li").first
    await expect(first).to_contain_text("flying to Lisbon")
    await expect(first.locator("strong")).to_have_text("best match")
    await expect(first.locator(".why")).to_contain_text("holds “Lisbon”, “conference”")
    await expect(first.locator("details")).not_to_have_attribute("open", "")
    await first.get_by_role("link", name="“Lisbon trip”").click()
    await expect(page).to_have_url(re.compile(r"/sessions/\d+#(turn|episode)-"))
    await expect(page.locator("h1")).to_have_text("Lisbon trip")

    # The preview shows the block a message would get.
    await page.goto(url + "/ui/agents/alice")
    await page.get_by_placeholder("a message to the model").fill("what is my cat called?")
    await page.get_by_role("button", name="Preview what is injected").click()
    await expect(page.locator("#block")).to_contain_text("Mia")

    # Add a fact, keep it, edit it (the old text stays as history), delete it.
    await page.goto(url + "/ui/agents/alice?tab=facts")
    await page.locator("summary", has_text="Add a fact").click()
    await page.locator("textarea[name=content]").fill("User's passport expires in 2031.")
    await page.get_by_role("button", name="Add fact").click()
    await expect(page.get_by_role("status")).to_have_text("Fact added.")
    row = page.locator("tr", has_text="User's passport expires in 2031.")
    await row.get_by_role("button", name="Keep").click()
    await expect(page.get_by_role("status")).to_contain_text("Fact kept")
    await expect(page.locator("tr", has_text="passport")).to_contain_text("kept")
    await page.get_by_role("link", name="User's passport expires in 2031.").click()
    await expect(page.locator("h1")).to_contain_text("pinned fact")
    await page.locator("textarea[name=content]").fill("User's passport expires in 2033.")
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("status")).to_have_text("Fact saved.")
    await expect(page.locator("#content")).to_have_text("User's passport expires in 2033.")
    await expect(page.locator("#history")).to_contain_text("2031")
    await page.get_by_role("link", name="Delete this fact…").click()
    await expect(page.locator("h1")).to_have_text("Delete this fact?")
    await expect(page.locator("#goes")).to_contain_text(
        "stop being served to the model as current memory")
    await expect(page.locator("#stays")).to_contain_text("stated by hand")
    await page.get_by_role("button", name="Delete fact").click()
    await expect(page.get_by_role("status")).to_contain_text("Fact deleted")
    facts = httpx.get(url + "/agents/alice/facts").json()["facts"]
    assert not any("passport" in f["content"] for f in facts)

    # A distilled fact's deletion page says its conversation keeps the words.
    await page.goto(url + "/ui/agents/alice")
    await page.locator("#identity tr", has_text="cat named Mia").get_by_role(
        "link", name="Delete").click()
    await expect(page.locator("#stays")).to_contain_text(
        "forget that session to remove them too")
    await page.get_by_role("link", name="Cancel").click()

    # Forgetting a session shows the conversation, asks first; cancelling keeps it.
    await page.goto(url + "/ui/agents/alice?tab=sessions")
    await page.locator("#sessions tr", has_text="Lisbon trip").get_by_role(
        "link", name="Forget").click()
    await expect(page.locator("h1")).to_have_text("Forget this session?")
    await expect(page.locator("#quote")).to_have_text("Lisbon trip")
    await expect(page.locator("#transcript")).to_contain_text("flying to Lisbon")
    await expect(page.locator("#goes")).to_contain_text("Its 2 messages")
    await page.get_by_role("link", name="Cancel").click()
    await expect(page.locator("h1")).to_have_text("Lisbon trip")
    assert len(httpx.get(url + "/agents/alice/sessions").json()["sessions"]) == 2
    await page.get_by_role("link", name="Forget this session…").click()
    await page.get_by_role("button", name="Forget session").click()
    await expect(page.get_by_role("status")).to_have_text("Session forgotten.")
    await expect(page.locator("#sessions")).not_to_contain_text("Lisbon trip")

    await page.get_by_role("button", name="Consolidate now").click()
    await expect(page.get_by_role("status")).to_have_text("Consolidation ran.")

    await page.get_by_role("link", name="Forget this agent…").click()
    await expect(page.locator("#goes")).to_contain_text("1 session and their 2 messages")
    await page.get_by_role("button", name="Forget agent").click()
    await expect(page.get_by_role("status")).to_have_text("Agent forgotten.")
    await expect(page.locator("main")).not_to_contain_text("alice")
    assert httpx.get(url + "/agents/alice").status_code == 404

    log = await page.goto(url + "/ui/agents/alice")
    assert log is not None and log.status == 404  # an error page, not JSON
    await expect(page.locator("[role=alert]")).to_contain_text("alice")


async def test_documents_and_procedures_are_shown_and_deleted_in_a_browser(
    page: Page, memory_proxy: ProxyServer
):
    url = memory_proxy.url
    seed(url)
    await page.goto(url + "/ui/agents/alice?tab=documents")
    await expect(page.locator("#documents")).to_contain_text("kettle.md")
    await page.get_by_role("link", name="Kettle").click()
    await expect(page.locator("h1")).to_have_text("Kettle")
    await expect(page.locator("#chunks")).to_contain_text("Descale the kettle every 6 weeks")
    await expect(page.locator("#chunks")).to_contain_text("Care")
    await page.get_by_role("link", name="Delete this document…").click()
    await expect(page.locator("h1")).to_have_text("Delete this document?")
    await expect(page.locator("#goes")).to_contain_text("its 1 chunk")
    await page.get_by_role("button", name="Delete document").click()
    await expect(page.get_by_role("status")).to_contain_text("Document deleted")
    await expect(page.locator("#documents")).not_to_contain_text("kettle")
    assert httpx.get(url + "/agents/alice/documents").json()["documents"] == []

    await page.goto(url + "/ui/agents/alice?tab=procedures")
    await expect(page.locator("#procedures li")).to_have_text(
        ["Plug in the disk", "Run the backup script"])
    await page.locator("#procedures tr", has_text="Weekly backup").get_by_role(
        "link", name="Delete").click()
    await page.get_by_role("button", name="Delete procedure").click()
    await expect(page.get_by_role("status")).to_have_text("Procedure deleted.")
    assert httpx.get(url + "/agents/alice/procedures").json()["procedures"] == []


SIZES = ((1280, 800), (390, 844))


@pytest.mark.slow
async def test_every_page_fits_a_desktop_and_a_phone(memory_proxy: ProxyServer):
    """Each page at 1280x800 and on a 390x844 phone: nothing runs off the side (tables
    reflow into one block per row), with a screenshot of each in test-results/pages/."""
    url = memory_proxy.url
    seed(url)
    session = httpx.get(url + "/agents/alice/sessions").json()["sessions"][-1]["id"]
    fact = httpx.get(url + "/agents/alice/facts").json()["facts"][0]["id"]
    episode = httpx.get(url + "/agents/alice/episodes").json()["episodes"][0]["id"]
    agent = "/ui/agents/alice"
    pages = {"agents": "/ui", **{f"agent-{tab}": f"{agent}?tab={tab}" for tab in (
                 "overview", "facts", "episodes", "sessions", "documents", "procedures")},
             "fact": f"{agent}/facts/{fact}", "session": f"{agent}/sessions/{session}",
             "document": f"{agent}/documents/1", "search": f"{agent}/search?q=Lisbon+agenda",
             "preview": f"{agent}/preview?message=where+am+I+flying",
             "delete-fact": f"{agent}/facts/{fact}/delete",
             "delete-episode": f"{agent}/episodes/{episode}/delete",
             "delete-document": f"{agent}/documents/1/delete",
             "delete-procedure": f"{agent}/procedures/1/delete",
             "forget-session": f"{agent}/sessions/{session}/forget",
             "forget-agent": f"{agent}/forget", "error": f"{agent}/facts/999999"}
    folder = SCREENSHOTS / "pages"
    folder.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium())
        try:
            for width, height in SIZES:
                opened = await browser.new_page(viewport={"width": width, "height": height})
                for name, path in pages.items():
                    answer = await opened.goto(url + path)
                    assert answer is not None and answer.status == (
                        404 if name == "error" else 200), (name, answer and answer.status)
                    await opened.screenshot(path=folder / f"{name}-{width}x{height}.png",
                                            full_page=True)
                    scroll, client = await opened.evaluate(
                        "[document.documentElement.scrollWidth,"
                        " document.documentElement.clientWidth]")
                    assert scroll <= client, (name, width, scroll, client)
                await opened.close()
        finally:
            await browser.close()


async def test_the_inspector_signs_in_with_a_key_and_shows_only_its_agents(
    page: Page, fake_upstream, tmp_path
):
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

        await page.goto(url + "/ui")
        await expect(page).to_have_url(re.compile(r"/ui/login$"))
        for wrong in ("mp-not-a-key", chat_only):
            await page.get_by_label("API key").fill(wrong)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.get_by_role("alert")).to_contain_text("not accepted")

        await page.get_by_label("API key").fill(dana_key)
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.locator("#agents")).to_contain_text("dana")
        await expect(page.locator("#agents")).not_to_contain_text("erin")
        refused = await page.goto(url + "/ui/agents/erin")
        assert refused is not None and refused.status == 403
        await page.goto(url + "/ui/agents/dana")
        await expect(page.locator("h1")).to_have_text("dana")
        # The cookie opens the inspector's pages only, not the JSON routes.
        assert (await page.request.get(url + "/agents/dana")).status == 401

        await page.get_by_role("button", name="Sign out").click()
        await expect(page).to_have_url(re.compile(r"/ui/login$"))
        await page.goto(url + "/ui/agents/dana")
        await expect(page).to_have_url(re.compile(r"/ui/login$"))


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
    dana, _ = keys.add(agents=("dana",), admin=False)
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
        session = InspectorSessions(Path(settings.data_dir)).issue(dana)
        as_dana = httpx.Client(base_url=url, cookies={"mnemoproxy_key": session},
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


def test_the_sign_in_cookie_is_a_session_token_not_the_key(fake_upstream, tmp_path):
    keys = KeyFile(tmp_path / "keys.json")
    _, admin = keys.add(agents=None, admin=True)
    with ProxyServer(memory_settings(fake_upstream, tmp_path, keys_file=str(keys.path))) as s:
        signed_in = httpx.post(s.url + "/ui/login", data={"key": admin},
                               headers={"Origin": s.url})
        assert signed_in.status_code == 303
        token = signed_in.cookies["mnemoproxy_key"]
        assert admin not in signed_in.headers["set-cookie"] and token
        # The token opens the inspector, and nothing else.
        page = httpx.get(s.url + "/ui", cookies={"mnemoproxy_key": token})
        assert page.status_code == 200 and "Agents" in page.text
        assert httpx.get(s.url + "/agents", headers={
            "Authorization": f"Bearer {token}"}).status_code == 401
        forged = token[:-4] + ("0000" if not token.endswith("0000") else "1111")
        assert httpx.get(s.url + "/ui", cookies={"mnemoproxy_key": forged}).status_code == 303


def test_inspector_edge_cases(memory_proxy):
    url = memory_proxy.url
    ui = httpx.Client(base_url=url, headers={"Origin": url})
    # Saving a fact's form with its text untouched keeps the fact (a textarea sends CRLF).
    added = httpx.post(url + "/agents/carol/facts", json={
        "content": "User's plants:\nbasil\nmint", "salience": 0.73}).json()
    saved = ui.post(f"/ui/agents/carol/facts/{added['id']}", data={
        "content": "User's plants:\r\nbasil\r\nmint ", "salience": "0.73", "keep": "true"})
    assert saved.status_code == 303 and saved.headers["location"].startswith(
        f"/ui/agents/carol/facts/{added['id']}?")
    fact = httpx.get(f"{url}/agents/carol/facts/{added['id']}").json()
    assert fact["status"] == "current" and fact["pinned"] and fact["salience"] == 0.73

    # An agent id holding a slash is one agent, not a path.
    ingest(url, "alice/forget", "c1", "My cat is called Mia.", "2024-05-08")
    listing = ui.get("/ui").text
    link = re.search(r'href="(/ui/agents/alice[^"]*)"', listing)
    assert link is not None and "%252F" in link[1]
    page = ui.get(link[1])
    assert page.status_code == 200 and "<h1>alice/forget</h1>" in page.text

    # Sessions page on like facts, a tab at a time.
    for n in range(3):
        ingest(url, "dora", f"c{n}", f"Note number {n}.", f"2024-05-0{n + 1}")
    sessions = httpx.get(url + "/agents/dora/sessions").json()["sessions"]
    later = ui.get("/ui/agents/dora", params={"tab": "sessions",
                                              "cursor": sessions[0]["id"]}).text
    assert "Note number 0." not in later
    assert "Note number 1." in later and "Note number 2." in later
    assert ui.get("/ui/agents/dora", params={"tab": "gossip"}).status_code == 400

    # Errors under /ui are pages too; nothing is done for an agent memory never saw.
    for method, path, status in (("POST", "/ui/agents/nobody/consolidate", 404),
                                 ("GET", "/ui/agents/alice/nowhere", 404),
                                 ("PUT", "/ui/agents/dora/facts", 405)):
        answer = ui.request(method, path)
        assert answer.status_code == status, (path, answer.status_code)
        assert answer.headers["content-type"].startswith("text/html"), path
    assert httpx.get(url + "/agents/nobody").status_code == 404
