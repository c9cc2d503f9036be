"""Fact merge and supersession decisions."""

from __future__ import annotations

from mnemoproxy.memory.models import FactDraft
from mnemoproxy.memory.write.facts import KnownFact, plan_fact_updates

BERLIN = KnownFact(1, "identity", "identity:location", "User lives in Berlin")


def test_restatement_merges():
    actions = plan_fact_updates([FactDraft("User lives in Berlin.", "identity")], [BERLIN])
    assert [(a.action, a.existing_id) for a in actions] == [("merge", 1)]


def test_near_duplicate_merges_but_distinct_fact_inserts():
    known = [KnownFact(2, "pinned", None, "User prefers green tea in the morning")]
    drafts = [
        FactDraft("User prefers green tea in the morning!", "pinned"),
        FactDraft("User is allergic to peanuts", "pinned"),
    ]
    actions = plan_fact_updates(drafts, known)
    assert [a.action for a in actions] == ["merge", "insert"]


def test_contradiction_in_same_slot_supersedes():
    draft = FactDraft("User lives in Paris", "identity", slot="identity:location")
    actions = plan_fact_updates([draft], [BERLIN])
    assert [(a.action, a.existing_id) for a in actions] == [("supersede", 1)]


def test_slot_filled_in_for_drafts_without_one():
    draft = FactDraft("User lives in Paris", "identity")
    actions = plan_fact_updates([draft], [BERLIN], slot_of=lambda text: "identity:location")
    assert actions[0].action == "supersede"
    assert draft.slot == "identity:location"


def test_change_of_mind_within_one_batch_keeps_the_last_word():
    drafts = [
        FactDraft("User lives in Rome", "identity", slot="identity:location"),
        FactDraft("User lives in Oslo", "identity", slot="identity:location"),
    ]
    actions = plan_fact_updates(drafts, [])
    assert [(a.action, a.draft.content) for a in actions] == [("insert", "User lives in Oslo")]


def test_duplicates_within_batch_collapse_and_kinds_do_not_mix():
    drafts = [FactDraft("User likes jazz", "pinned"), FactDraft("user likes jazz", "pinned")]
    assert len(plan_fact_updates(drafts, [])) == 1
    pinned_twin = [KnownFact(5, "pinned", None, "User lives in Berlin")]
    actions = plan_fact_updates([FactDraft("User lives in Berlin", "identity")], pinned_twin)
    assert actions[0].action == "insert"


def test_change_of_mind_after_a_known_value_still_supersedes_it():
    drafts = [
        FactDraft("User moved to Rome", "identity", slot="identity:location"),
        FactDraft("User lives in Oslo", "identity", slot="identity:location"),
    ]
    actions = plan_fact_updates(drafts, [BERLIN])
    assert [(a.action, a.existing_id, a.draft.content) for a in actions] == [
        ("supersede", 1, "User lives in Oslo")
    ]
