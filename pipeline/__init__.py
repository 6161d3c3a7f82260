"""The application layer: what a run is, independent of how it is orchestrated (no Prefect).

* :mod:`pipeline.params` -- the one parameter object (:class:`fastmice.EnsembleParams`) as
  the command line and deployments give it;
* :mod:`pipeline.ingest` -- reading user data files, registering them as dataset batches;
* :mod:`pipeline.plans` -- what a ``cluster``, ``extend`` or ``recluster`` run works on;
* :mod:`pipeline.keys` -- the content keys of every artifact; :mod:`pipeline.reuse` -- the
  one skip-if-stored rule;
* :mod:`pipeline.results` -- a run's record, labels table and scores;
  :mod:`pipeline.runs` -- run ids, reading, listing and summarising records;
* :mod:`pipeline.progress` -- progress listeners (the command's progress bar);
* :mod:`pipeline.stored` -- a command answered from the store when a run computed it;
* :mod:`pipeline.commands` -- each command's one call: what it must do, and what to print.

It imports :mod:`fastmice` and :mod:`storage` only: ``tasks/`` and ``flows/`` run it under
Prefect, ``cli/`` uses it directly (``fastmice runs`` never loads Prefect).
"""
