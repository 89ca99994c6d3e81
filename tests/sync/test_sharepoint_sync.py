"""``sync sharepoint`` against a fake Graph: the index is what a fresh ingest of the drive makes."""

from __future__ import annotations

from assistant.types import User
from tests.support.graph_server import group, link, user
from tests.sync.harness import Harness, allowed

LEAVE = b"# Leave\n\nStaff receive 24 working days of annual leave each year.\n"
TRAVEL = b"# Travel\n\nEconomy class is booked for flights under six hours.\n"
PAY = b"Salaries are paid on the 25th of each month.\n"


def test_a_first_sync_indexes_every_file_with_its_link_and_audience(harness: Harness) -> None:
    drive = harness.add_drive("hr")
    folder = drive.add_folder("HR", grants=[group("HR Team")])
    leave = drive.add_file("Leave policy.md", LEAVE, parent=folder, grants=[])
    travel = drive.add_file("Travel.md", TRAVEL, grants=[link("organization")])
    pay = drive.add_file("Pay.txt", PAY, grants=[user("Ann@Contoso.example")])
    drive.add_file("logo.png", b"\x89PNG", grants=[link("organization")])
    note = drive.add_file("Remote work.md", b"Work from home two days a week.\n", grants=[])

    report = harness.sync()

    assert report.failures == ()
    assert sorted(report.ingest.added) == sorted(
        [f"hr/{leave}.md", f"hr/{travel}.md", f"hr/{pay}.txt", f"hr/{note}.md"]
    )
    seen = harness.indexed()
    assert seen == harness.fresh()
    title, url, audience = seen.docs[f"hr/{leave}.md"]
    assert title == "Leave"  # the document's own heading; the file's name only without one
    assert seen.docs[f"hr/{note}.md"][0] == "Remote work"
    assert seen.audience(f"hr/{note}.md") == ("admin",)  # shared with no one: not everyone
    assert url.endswith("/HR/Leave policy.md")
    assert audience == ("hr-team",)
    assert seen.audience(f"hr/{pay}.txt") == ("ann@contoso.example",)
    assert seen.audience(f"hr/{travel}.md") == ("signed-in",)


def test_deletes_renames_moves_and_sharing_changes_arrive_exactly(harness: Harness) -> None:
    drive = harness.add_drive("hr")
    folder = drive.add_folder("HR", grants=[group("HR")])
    leave = drive.add_file("Leave.md", LEAVE, grants=[user("ann@contoso.example")])
    travel = drive.add_file("Travel.md", TRAVEL, parent=folder, grants=[])
    pay = drive.add_file("Pay.txt", PAY, grants=[link("organization")])
    harness.sync()
    first = harness.indexed().chunks

    drive.rename(leave, "Annual leave.md")
    drive.move(travel, "root")
    drive.delete(pay)
    drive.share(folder, [group("HR"), group("Managers")])
    report = harness.sync()

    assert report.drives[0].downloaded == 0  # no content changed
    seen = harness.indexed()
    assert seen == harness.fresh()
    assert sorted(seen.docs) == sorted([f"hr/{leave}.md", f"hr/{travel}.md"])
    assert [c for c in seen.chunks if c not in first] == []  # same chunks, same ids
    ann = User(name="ann@contoso.example")
    bob = User(name="bob@contoso.example", groups=frozenset({"managers"}))
    for person in (ann, bob, User()):
        for item_id in drive.files():
            audience = seen.audience(f"hr/{item_id}.md")
            assert person.may_read(audience) == allowed(drive, item_id, person)


def test_a_sharing_change_of_a_folder_relabels_the_files_below_it(harness: Harness) -> None:
    drive = harness.add_drive("hr")
    folder = drive.add_folder("HR", grants=[group("HR")])
    leave = drive.add_file("Leave.md", LEAVE, parent=folder, grants=[])
    harness.sync()
    carol = User(name="carol@contoso.example", groups=frozenset({"finance"}))
    assert not carol.may_read(harness.indexed().audience(f"hr/{leave}.md"))

    drive.share(folder, [group("Finance")])
    report = harness.sync()

    assert report.drives[0].relabelled == 1
    assert carol.may_read(harness.indexed().audience(f"hr/{leave}.md"))
    assert harness.indexed() == harness.fresh()
