"""`mnemoproxy import-docs DIR --agent-id A`: every document file of a folder into the
agent's knowledge base, in-process on a data_dir or to a running proxy, with a progress
bar; a file the proxy refuses is named and the others still go in."""

from __future__ import annotations

import json

import httpx

from mnemoproxy.proxy.cli.main import main
from mnemoproxy.proxy.edge.keys import KeyFile
from tests.support.data.pdf_maker import make_pdf
from tests.support.memory_client import memory_settings
from tests.support.servers.proxy_server import ProxyServer


def a_folder(tmp_path):
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "guide.md").write_text("# Guide\n\n## Ports\n\nThe admin console listens on "
                                     "port 8443.\n")
    (folder / "faq.txt").write_text("Backups run nightly at 02:00.\n\nThey are kept 30 days.")
    (folder / "sub" / "page.html").write_text("<h1>Page</h1><p>The VPN gateway is vpn2.</p>")
    (folder / "sub" / "spec.pdf").write_bytes(make_pdf([["The rack holds 42 units."]]))
    (folder / "image.png").write_bytes(b"\x89PNG not a document")
    return folder


def test_import_docs_on_a_data_dir(tmp_path, capsys):
    folder = a_folder(tmp_path)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 truncated")
    data = ["--data-dir", str(tmp_path / "data"), "--agent-id", "ops"]
    assert main(["import-docs", str(folder), *data, "--json"]) == 1  # one file refused
    answer = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert answer["documents"] == 4 and answer["chunks"] == 4
    assert [f["file"] for f in answer["failed"]] == ["broken.pdf"]
    assert "broken.pdf" in answer["failed"][0]["error"]
    assert main(["search", "which port does the admin console use", *data, "--scope",
                 "documents", "--json"]) == 0
    found = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["results"]
    assert "8443" in found[0]["text"]
    assert found[0]["provenance"]["title"] == "Guide"

    # The folder again: nothing is stored twice; a changed file replaces its older text.
    (folder / "broken.pdf").unlink()
    (folder / "faq.txt").write_text("Backups run nightly at 03:00.")
    assert main(["import-docs", str(folder), *data]) == 0
    assert capsys.readouterr().out.strip() == (
        "Imported 4 documents into ops: 0 new, 1 updated, 3 unchanged (4 chunks).")
    assert main(["search", "when do backups run", *data, "--scope", "documents",
                 "--json"]) == 0
    texts = [r["text"] for r in json.loads(capsys.readouterr().out)["results"]]
    assert "Backups run nightly at 03:00." in texts and not any("02:00" in t for t in texts)


def test_import_docs_to_a_running_proxy(fake_upstream, tmp_path, capsys):
    settings = memory_settings(fake_upstream, tmp_path)
    _, secret = KeyFile(tmp_path / "data" / "keys.json").add(agents=("ops",), admin=False)
    folder = a_folder(tmp_path)
    with ProxyServer(settings) as server:
        assert main(["import-docs", str(folder), "--agent-id", "ops", "--url", server.url,
                     "--api-key", secret, "--no-recursive", "--json"]) == 0
        answer = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert answer == {"agent_id": "ops", "documents": 2, "new": 2, "updated": 0,
                          "unchanged": 0, "chunks": 2, "failed": []}
        listed = httpx.get(f"{server.url}/agents/ops/documents",
                           headers={"Authorization": f"Bearer {secret}"}).json()["documents"]
        assert sorted(d["source"] for d in listed) == ["faq.txt", "guide.md"]
        # The key is bound to ops: another agent is refused, and the command says so.
        assert main(["import-docs", str(folder), "--agent-id", "eve", "--url", server.url,
                     "--api-key", secret]) == 1
        assert "403" in capsys.readouterr().err
