"""Prefect flows composing the tasks of :mod:`tasks`, and the ``fastmice`` command line.

:mod:`flows.pipeline` holds the flows (``cluster_flow``, ``extend_flow``,
``recluster_flow``); :mod:`flows.cli` the command; :mod:`flows.progress` the progress
reporting they share.
"""
