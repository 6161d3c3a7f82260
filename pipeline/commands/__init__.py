"""The commands' application functions: each ``fastmice`` command is one call here, which
decides everything the command must do and returns what to print (no Prefect; the command
line, :mod:`cli.commands`, only parses, calls and prints).

* :mod:`pipeline.commands.cluster` -- ``cluster``, ``extend``, ``recluster``: the stored
  answer, the memory check, the registration, the plan, then the flow through the caller's
  runner;
* :mod:`pipeline.commands.store` -- ``append``, ``runs``, ``show``, ``fsck``;
* :mod:`pipeline.commands.results` -- ``report``, ``export``, ``label``;
* :mod:`pipeline.commands.errors` -- the errors they raise for a user to read.

``store``, ``rm`` and ``gc`` are one call each of :mod:`pipeline.housekeeping`.
"""
