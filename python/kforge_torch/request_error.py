"""The error of a request the reference process cannot serve (malformed, or not fitting the task):
its reply says why. Its own module so that reference.py, which answers requests, and prepare.py,
which serves the prepare request, both use it without importing each other."""


class RequestError(Exception):
    """The request is malformed or does not fit the task; the reply says why."""
