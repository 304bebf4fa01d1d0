"""Mark HP requests for the Mosaic arbiter (docs/sched.md).

Under ``LD_PRELOAD=libmosaic.so MOSAIC_ROLE=hp`` these call the shim's
exported ``mosaic_request_begin`` / ``mosaic_request_end``; without the shim
(or in any other role) they do nothing, so a service can use them
unconditionally::

    import mosaic
    with mosaic.request():
        out = model(batch)
        torch.cuda.synchronize()

One such request is open at a time: ``begin()`` while one is open ends it
first, and ``end()`` with none open returns MOSAIC_EINVAL (-1).

A service that already uses NVTX needs no import at all: the shim is the
NVTX injection library of an HP process, and a range named
``REQUEST_RANGE`` ("mosaic:request") is a request::

    with torch.cuda.nvtx.range(mosaic.REQUEST_RANGE):
        out = model(batch)
        torch.cuda.synchronize()

(unless NVTX_INJECTION64_PATH names another tool, such as nsys: then use
``request()``). Once a program marks requests either way, the shim stops
learning them from the synchronisation pattern.
"""
import contextlib
import ctypes

__all__ = ["REQUEST_RANGE", "active", "begin", "end", "request"]

#: The NVTX range name that marks an HP request (docs/sched.md).
REQUEST_RANGE = "mosaic:request"


def _bind():
    try:
        lib = ctypes.CDLL(None)  # the process's global namespace: the preload
        b, e = lib.mosaic_request_begin, lib.mosaic_request_end
    except (OSError, AttributeError):
        return None, None
    b.restype = e.restype = ctypes.c_int
    b.argtypes = e.argtypes = []
    return b, e


_begin, _end = _bind()


def active():
    """True when the shim is loaded into this process."""
    return _begin is not None


def begin():
    """Begins an HP request; returns 0 or a negative MOSAIC_E* code."""
    return _begin() if _begin else 0


def end():
    """Ends the HP request begun last; returns 0 or a negative MOSAIC_E* code."""
    return _end() if _end else 0


@contextlib.contextmanager
def request():
    """A ``with`` block that is one HP request."""
    begin()
    try:
        yield
    finally:
        end()
