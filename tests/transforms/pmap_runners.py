"""The dask executor's pmap runners the cluster tests choose between (shared by test_pmap_dask_stages.py
and test_pmap_blocks.py): "actor" (the runner actor, in process), "actor-shipped" (the same actor
handed the call as a worker process gets it: compiled stages, inputs sent by name) and "tasks"."""
from __future__ import annotations

RUNNERS = ("actor", "actor-shipped", "tasks")


def use_runner(monkeypatch, runner: str) -> None:
    """Make pmap on a dask cluster take ``runner`` (one of :data:`RUNNERS`) for this test."""
    from arrayx.transforms import pmap_dask, pmap_dask_actor

    monkeypatch.setattr(pmap_dask, "RUNNER_ACTOR", runner != "tasks")
    if runner == "actor-shipped":
        placed = pmap_dask_actor.runner_for

        def as_if_remote(client, cluster_workers=None):
            entry = placed(client, cluster_workers)
            if entry is not None:
                entry.local = False
            return entry

        monkeypatch.setattr(pmap_dask_actor, "runner_for", as_if_remote)
