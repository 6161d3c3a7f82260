"""Thin Prefect tasks around the fastmice steps: resolve refs, load, one library call, save.

Every task takes the store URL and small JSON-able refs (never arrays), so a task runs the
same in a thread or on a Dask worker, and returns a small ref dict. The modules mirror the
library: :mod:`tasks.specs` (view groups), :mod:`tasks.graphs` (bipartite graphs),
:mod:`tasks.consensus` (base clusterings and the consensus), :mod:`tasks.results` (labels,
scores, run records) and :mod:`tasks.datasets` (registering data). :mod:`tasks.keys` and
:mod:`tasks.ingest` hold the Prefect-free parts (content keys, reading and registering
data) so that the command line can validate its input without importing Prefect.
"""
