"""The command lines, at the top of the house: ``fastmice`` (:mod:`cli.main`) and the
deployment server (:mod:`cli.serve`). They may import every layer below them."""
