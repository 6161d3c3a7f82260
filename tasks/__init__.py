"""Prefect tasks around the fastmice steps: resolve refs, load, one library call, save.

Every task takes the store URL and small JSON-able refs and parameters (never arrays), so a
task runs the same in a thread or on a Dask worker, and returns a small ref dict with a
``computed`` flag. The modules mirror the library: :mod:`tasks.specs` (view groups),
:mod:`tasks.graphs` (bipartite graphs), :mod:`tasks.consensus` (base clusterings and the
consensus), :mod:`tasks.results` (labels, scores, run record, Prefect artifacts) and
:mod:`tasks.datasets` (registering data). Keys, reuse, plans and records are the
Prefect-free :mod:`pipeline`'s.
"""
