"""User errors of the index and search stages: the CLI prints them as one line, no traceback."""


class IndexError_(ValueError):
    """Base class; the name avoids shadowing the builtin IndexError."""


class StoreMissing(IndexError_):
    pass


class NotIndexed(IndexError_):
    pass
