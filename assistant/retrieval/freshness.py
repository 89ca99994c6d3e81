"""One immutable search view per question, kept current off the question path.

When a question sees a newer committed generation, `FreshViews.current` does
only what is cheap: it reads the change records from its view's generation to
the new one and masks out every row they wrote or deleted (so from that
moment no answer cites a deleted or replaced chunk), and starts a background
thread. The thread has the reader fetch the changed rows (`IndexReader.snapshot`
patches; it reloads in full when the records are missing or the store moved
on meanwhile), builds
the new `SearchView` (BM25 and all), prepares the structures of every audience
class the old view served (`SearchView.prepare_classes`: each class's BM25 patched
from its old one), and swaps it in. Until then the masked old
view keeps serving: an edited document is absent for that time, never stale.

Each question holds one view for its whole run, so it never mixes two
generations. Only a view with no change records to mask with (the first
load, a rebuild, a reader too far behind) is built on the question path, as
before.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from assistant.errors import StoreError
from assistant.index.reader import IndexReader
from assistant.retrieval.view import SearchView
from assistant.types import IndexSnapshot

__all__ = ["FreshViews"]

logger = logging.getLogger(__name__)

_RETRY_S = 1.0
_WARN_EVERY_S = 60.0


class FreshViews:
    """The current `SearchView` of an `IndexReader`'s index.

    Args:
        reader: Where snapshots, generations and change records come from.
        build: Derives a view from a snapshot (BM25 and columns: the slow part).
        prepare_classes: Build each known audience class's structures before a new
            view is served (False: its first question builds them, as before
            round three; kept for the benchmark's comparison).
    """

    def __init__(
        self,
        reader: IndexReader,
        build: Callable[[IndexSnapshot], SearchView],
        *,
        prepare_classes: bool = True,
    ) -> None:
        self._reader = reader
        self._build = build
        self._prepare = prepare_classes
        self._view: SearchView | None = None
        self._lock = threading.Lock()
        self._published = threading.Condition(self._lock)
        self._worker: threading.Thread | None = None
        self._retry_at = 0.0
        self._warned_at = -_WARN_EVERY_S

    def current(self) -> SearchView:
        """Return the view a question should use now (cheap unless nothing can be masked).

        A question that must not miss fresh rows waits with `wait` (the retriever
        does, on a small index or on no good match: round three, finding D29).

        Raises:
            IndexNotFoundError: There is no index yet.
            IndexMismatchError: The index was built with another embedding model.
        """
        return self._latest()

    def _latest(self) -> SearchView:
        view = self._view
        try:
            generation = self._reader.generation()
        except StoreError as exc:
            if view is None:
                raise
            # The store is unreachable (a Chroma server down or restarting): answer from
            # the view in memory, as docs/hardening.md promises (finding D12).
            self._warn_unreachable(exc)
            return view
        if view is not None and view.generation == generation:
            if view.pending:
                self._ensure_worker()
            return view
        with self._lock:
            view = self._view
            if view is None or view.generation != generation:
                view = self._advance(view, generation)
                self._view = view
        if view.pending:
            self._ensure_worker()
        return view

    def _warn_unreachable(self, exc: StoreError) -> None:
        now = time.monotonic()
        if now >= self._warned_at + _WARN_EVERY_S:
            self._warned_at = now
            logger.warning("the index store is unreachable; answering from memory: %s", exc)

    def wait(self, timeout: float) -> bool:
        """Wait until the view holds every row of the committed generation; False on timeout."""
        deadline = time.monotonic() + timeout
        while not self.settled():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self._latest()
            with self._published:
                self._published.wait(timeout=min(remaining, 0.05))
        return True

    def settled(self) -> bool:
        """Return whether the view holds every row of the committed generation."""
        view = self._view
        current = self._reader.generation()
        return view is not None and not view.pending and view.generation == current

    def _advance(self, view: SearchView | None, generation: str) -> SearchView:
        """Return ``view`` masked for ``generation``, or a fully loaded view when it cannot be."""
        if view is not None:
            affected = self._reader.changes(view.snapshot.generation, generation)
            if affected is not None:
                logger.info(
                    "generation %s seen: %d changed chunks masked until its rows are loaded",
                    generation,
                    len(affected),
                )
                return view.masked(affected, generation=generation)
            logger.info("generation %s has no change records from ours: reloading", generation)
        return self._build(self._reader.snapshot())

    def _ensure_worker(self) -> None:
        with self._lock:
            if self._worker is not None or time.monotonic() < self._retry_at:
                return
            self._worker = threading.Thread(target=self._work, name="index-refresh", daemon=True)
            self._worker.start()

    def _work(self) -> None:
        try:
            while self._step():
                pass
        except Exception:
            # The masked view keeps serving; the next question tries again after a pause.
            logger.exception("refreshing the search view failed; retrying on a later question")
            self._retry_at = time.monotonic() + _RETRY_S
        finally:
            with self._lock:
                self._worker = None

    def _step(self) -> bool:
        """Bring the view one patch closer to the committed generation; False when current."""
        served = self._view
        if served is None or not served.pending:
            return False
        base = served.snapshot
        snapshot = self._reader.snapshot()  # patched, or reloaded when it cannot be
        built = served.patched(snapshot) if snapshot.generation != base.generation else None
        if built is None:
            built = self._build(snapshot)
        if self._prepare:
            # Every audience class the served view knew gets its structures here, off the
            # question path, so its first question after the ingest finds them built.
            built.prepare_classes(served)
        with self._lock:
            if self._view is None or self._view.snapshot is not base:
                return True  # replaced meanwhile (a full reload on the question path)
            now = self._reader.generation()
            if now == built.generation:
                self._publish(built)
                return False
            affected = self._reader.changes(built.generation, now)
            if affected is not None:
                self._publish(built.masked(affected, generation=now))
            return True

    def _publish(self, view: SearchView) -> None:
        """Swap in ``view``; call with the lock held."""
        self._view = view
        self._published.notify_all()
