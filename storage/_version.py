"""Version of the storage layer and of its on-disk format."""

__version__ = "0.1.0"
#: Bumped when the layout or the meta.json / record schema changes incompatibly.
FORMAT_VERSION = 1
