"""Errors the lab reports to its user as one line."""


class LabError(Exception):
    """A failure with a cause and a hint of what to do about it.

    Printed as ``molab: error: <cause>; <hint>`` and exit code 2.
    """

    def __init__(self, cause, hint="see 'python3 -m lab.molab --help'"):
        super().__init__(cause)
        self.cause = str(cause).strip().replace("\n", " ")
        self.hint = str(hint).strip().replace("\n", " ")

    def line(self):
        return f"molab: error: {self.cause}; {self.hint}"
