"""The processes behind the commands: Prefect's home and API servers (a command's own,
embedded, or the local one commands share, with its idle watch), a flow run in the
command's process (:mod:`processes.engine`), the warm process that runs commands with
everything imported, and the registry of what stays running (:mod:`processes.daemons`).

Below :mod:`cli` (which never needs to be imported here: the warm process is told the entry
function to run) and above :mod:`flows`, imported lazily by the engine only.
"""
