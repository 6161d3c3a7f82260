"""The commands of ``fastmice``, one file per family; each file declares its commands'
arguments (``add_parsers``) beside their handlers (``cmd_<name>(args, output)``).

============================  ==========================================================
file                          commands
============================  ==========================================================
``cluster.py``                ``cluster``, ``extend``, ``recluster`` (they run a flow)
``append.py``                 ``append`` (a new batch of samples)
``runs.py``                   ``runs``, ``show``
``report.py``                 ``report`` (a run's HTML report)
``results.py``                ``export``, ``label`` (what a run gives back)
``store.py``                  ``fsck``, ``store``, ``rm``, ``gc`` (check and tidy the store)
``daemon.py``                 ``daemon`` (the processes left running for later commands)
============================  ==========================================================

``python -m cli.serve`` (the deployments' long-lived process) is :mod:`cli.serve`.
"""
