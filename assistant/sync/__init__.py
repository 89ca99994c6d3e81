"""Documents from where organisations keep them: SharePoint and OneDrive through Microsoft Graph.

`run.sync_sources` walks each configured drive's delta feed into a mirror beside
the index (one file per item, named by its id, and the sources file that gives
each its title, web URL and audience), then ingests the mirror through the same
incremental path as ``ingest.py``. See docs/sharepoint.md.
"""
