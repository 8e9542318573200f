"""Where the reference process writes a tensor: a range of the GPU worker's device memory (`ipc`) or
of a file (`file`, host memory for tests without a GPU).

A LOCATION is `{"ipc": HEX, "offset": N, "bytes": N}` or `{"file": PATH, "offset": N, "bytes": N}`,
with an optional `"dtype"` the writer checks against the argument's. Every write checks that the
range holds exactly the tensor (element count times the dtype's size) before touching memory, so a
worker bug surfaces as a message naming the buffer, never as a write past an allocation. Within one
request, each distinct IPC handle is opened once; all are closed, after a device synchronisation,
when the `Writer` closes, and that happens before the reply.
"""
import os

import torch

from .checks import ITEMSIZE
from .problem import TORCH_DTYPES


class LocationError(Exception):
    """A location is malformed or does not fit the tensor written to it."""


class Location:
    def __init__(self, name, spec):
        if not isinstance(spec, dict):
            raise LocationError(f"buffer {name}: a location is an object, not {type(spec).__name__}")
        kinds = [k for k in ("ipc", "file") if k in spec]
        if len(kinds) != 1:
            raise LocationError(f"buffer {name}: a location has exactly one of \"ipc\" and \"file\"")
        self.name, self.kind, self.target = name, kinds[0], spec[kinds[0]]
        if not isinstance(self.target, str) or not self.target:
            raise LocationError(f"buffer {name}: \"{self.kind}\" must be a non-empty string")
        for field in ("offset", "bytes"):
            value = spec.get(field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise LocationError(f"buffer {name}: \"{field}\" must be a non-negative integer, not {value!r}")
        self.offset, self.bytes = spec["offset"], spec["bytes"]
        self.dtype = spec.get("dtype")
        if self.dtype is not None and self.dtype not in TORCH_DTYPES:
            raise LocationError(f"buffer {name}: unknown dtype {self.dtype!r} (kforge's dtypes: "
                                f"{' '.join(TORCH_DTYPES)})")
        unknown = set(spec) - {"ipc", "file", "offset", "bytes", "dtype"}
        if unknown:
            raise LocationError(f"buffer {name}: unknown location field(s) {', '.join(sorted(unknown))}")

    def check(self, dtype, count, what):
        """Raises LocationError unless the range holds exactly `count` elements of `dtype`."""
        if self.dtype is not None and self.dtype != dtype:
            raise LocationError(f"buffer {self.name}: the location is {self.dtype}, but {what} is {dtype}")
        need = count * ITEMSIZE[dtype]
        if self.bytes != need:
            raise LocationError(f"buffer {self.name}: the location holds {self.bytes} bytes, but {what} is {count} "
                                f"{dtype} elements = {need} bytes at these sizes")


class Writer:
    """Writes tensors into locations during one request; close() synchronises and unmaps."""

    def __init__(self, device, driver=None):
        self.device, self.driver = device, driver
        self.mapped = {}   # ipc handle hex -> (device pointer, bytes mapped)
        self.files = {}    # path -> fd

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.close()
        except Exception:
            if exc_type is None:  # a failure to close is the request's error only if nothing failed before
                raise

    def write(self, location, tensor, dtype, what):
        """Writes `tensor` (any device, any dtype convertible to `dtype`) into `location`, as `dtype`."""
        count = tensor.numel()  # a 0-dim tensor is one element
        location.check(dtype, count, what)
        flat = tensor.detach().reshape(-1)
        if location.kind == "file":
            self._write_file(location, flat.to(TORCH_DTYPES[dtype]))
        else:
            self._write_ipc(location, flat, dtype, count)

    def _write_file(self, location, flat):
        fd = self.files.get(location.target)
        if fd is None:
            try:
                fd = os.open(location.target, os.O_RDWR)
            except OSError as e:
                raise LocationError(f"buffer {location.name}: cannot open {location.target}: {e.strerror}") from None
            self.files[location.target] = fd
        size = os.fstat(fd).st_size
        if location.offset + location.bytes > size:
            raise LocationError(f"buffer {location.name}: {location.target} has {size} bytes, the location ends at "
                                f"{location.offset + location.bytes}")
        data = flat.cpu().contiguous().view(torch.uint8).numpy()
        written = os.pwrite(fd, memoryview(data), location.offset)
        if written != location.bytes:
            raise LocationError(f"buffer {location.name}: wrote {written} of {location.bytes} bytes to "
                                f"{location.target}")

    def _write_ipc(self, location, flat, dtype, count):
        from .cuda_driver import device_tensor
        if self.driver is None:
            raise LocationError(f"buffer {location.name}: an ipc location needs the cuda device")
        if location.target not in self.mapped:
            self.mapped[location.target] = self.driver.open_ipc(location.target)
        ptr, size = self.mapped[location.target]
        if location.offset + location.bytes > size:
            raise LocationError(f"buffer {location.name}: the allocation has {size} bytes, the location ends at "
                                f"{location.offset + location.bytes}")
        destination = device_tensor(torch, ptr + location.offset, count, dtype)
        destination.copy_(flat)
        del destination

    def close(self):
        errors = []
        if self.mapped:
            torch.cuda.synchronize()
            for ptr, _ in self.mapped.values():
                try:
                    self.driver.close_ipc(ptr)
                except Exception as e:  # keep closing the others
                    errors.append(str(e))
            self.mapped.clear()
        for fd in self.files.values():
            os.close(fd)
        self.files.clear()
        if errors:
            raise LocationError("; ".join(errors))
