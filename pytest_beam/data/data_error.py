class BeamDataError(Exception):
    """A data-source problem: the session must stop before any test runs.

    The message names the file and the fix; no partial data set is ever used.
    """
