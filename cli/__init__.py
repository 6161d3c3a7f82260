"""The command lines, at the top of the house: ``fastmice`` (:mod:`cli.launch`, then
:mod:`cli.main`; the commands in :mod:`cli.commands`, each one call into
:mod:`pipeline.commands`) and the deployment server (:mod:`cli.serve`). They parse, call and
print; the processes behind them (Prefect's API servers, the warm process) are
:mod:`processes`'."""
