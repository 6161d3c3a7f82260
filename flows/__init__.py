"""Prefect flows composing the tasks of :mod:`tasks`, and their deployments.

:mod:`flows.pipeline` holds the flows (``cluster_flow``, ``extend_flow``,
``recluster_flow``) and ``run_plan``; :mod:`flows.deployments` the inbox flow and the serving
of both deployments; :mod:`flows.runners` the task runner a run uses; :mod:`flows.progress`
the Prefect progress artifact. The command lines that start them are in :mod:`cli`.
"""
