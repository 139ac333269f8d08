"""Exceptions raised by flashc.

Every failure of the runtime's C ABI becomes a FlashcError subclass chosen by
the status code; the runtime's message (which names the argument, bundle or
kernel at fault) is the exception's text and `.status` keeps the code.
"""


class FlashcError(RuntimeError):
    """Base class of every flashc error. `.status` is the C ABI status code
    (0 when the error was detected in Python before reaching the runtime)."""

    status = 0

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class InvalidArgumentError(FlashcError, ValueError):
    status = 1


class InvalidBundleError(FlashcError):
    status = 2


class NoDriverError(FlashcError):
    status = 3


class NoDeviceError(FlashcError):
    status = 4


class CompileError(FlashcError):
    status = 5


class CudaError(FlashcError):
    status = 6


class NotFoundError(FlashcError, LookupError):
    status = 7


class UnsupportedError(FlashcError):
    status = 8


class InternalError(FlashcError):
    status = 9


class RuntimeLibraryNotFoundError(FlashcError):
    """libflashc_runtime.so could not be located or loaded."""


class BundleNotFoundError(NotFoundError):
    """No bundle for a configuration in FLASHC_BUNDLE_PATH or the cache, and
    no compiler to build one."""


class CompilerError(FlashcError):
    """The flashc compiler failed to produce a bundle."""


_BY_STATUS = {cls.status: cls for cls in (
    InvalidArgumentError, InvalidBundleError, NoDriverError, NoDeviceError, CompileError,
    CudaError, NotFoundError, UnsupportedError, InternalError)}


def error_for_status(status, message):
    """The exception for a non-zero flashc_status."""
    cls = _BY_STATUS.get(int(status), FlashcError)
    return cls(message or "flashc runtime error (status %d, no message)" % status, int(status))
