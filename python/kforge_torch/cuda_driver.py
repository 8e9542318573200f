"""The CUDA driver calls the reference process makes, through ctypes on libcuda.so.1.

The GPU worker owns every allocation and sends `cuIpcGetMemHandle` handles; this side maps them
(`cuIpcOpenMemHandle` with lazy peer access), writes through a zero-copy torch view, and unmaps
(`cuIpcCloseMemHandle`) before replying, so nothing crosses the host and nothing outlives a request.
The handle must be opened in the context torch computes in: torch's runtime uses the device's
primary context, which is made current here when torch has not done so yet.

Every call is checked; a failure is a `CudaDriverError` naming the call and the driver's own text.
`DeviceView` wraps a mapped range with `__cuda_array_interface__`, which `torch.as_tensor` takes as
a view (no copy); bf16 has no typestr, so it travels as int16 and is reinterpreted.
"""
import ctypes

CU_IPC_HANDLE_SIZE = 64
CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1

CUdeviceptr = ctypes.c_uint64
TYPESTR = {"f16": "<f2", "bf16": "<i2", "f32": "<f4", "f64": "<f8", "i8": "|i1", "u8": "|u1",
           "i16": "<i2", "i32": "<i4", "i64": "<i8"}


class CudaDriverError(Exception):
    """A driver call failed; the message names the call and the driver's error."""


class IpcMemHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * CU_IPC_HANDLE_SIZE)]


def handle_from_hex(text):
    """The CUipcMemHandle whose 64 bytes `text` spells in hex."""
    try:
        raw = bytes.fromhex(text)
    except (TypeError, ValueError):
        raise CudaDriverError(f"an ipc handle must be {2 * CU_IPC_HANDLE_SIZE} hex digits") from None
    if len(raw) != CU_IPC_HANDLE_SIZE:
        raise CudaDriverError(f"an ipc handle must be {CU_IPC_HANDLE_SIZE} bytes ({2 * CU_IPC_HANDLE_SIZE} hex "
                              f"digits), not {len(raw)}")
    handle = IpcMemHandle()
    ctypes.memmove(ctypes.byref(handle), raw, CU_IPC_HANDLE_SIZE)
    return handle


class Driver:
    """libcuda.so.1, initialised; one per process."""

    _SIGNATURES = {
        "cuInit": [ctypes.c_uint],
        "cuGetErrorName": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
        "cuGetErrorString": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
        "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
        "cuCtxGetCurrent": [ctypes.POINTER(ctypes.c_void_p)],
        "cuCtxSetCurrent": [ctypes.c_void_p],
        "cuCtxSynchronize": [],
        "cuDevicePrimaryCtxRetain": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int],
        "cuIpcOpenMemHandle_v2": [ctypes.POINTER(CUdeviceptr), IpcMemHandle, ctypes.c_uint],
        "cuIpcCloseMemHandle": [CUdeviceptr],
        "cuMemGetAddressRange_v2": [ctypes.POINTER(CUdeviceptr), ctypes.POINTER(ctypes.c_size_t), CUdeviceptr],
    }

    def __init__(self, extra_signatures=None):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaDriverError(f"cannot load libcuda.so.1 (the NVIDIA driver): {e}") from None
        for name, argtypes in {**self._SIGNATURES, **(extra_signatures or {})}.items():
            fn = getattr(self.lib, name)
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
        self.call("cuInit", 0)

    def call(self, name, *args):
        """Calls `name`; raises CudaDriverError unless it returns CUDA_SUCCESS."""
        result = getattr(self.lib, name)(*args)
        if result != 0:
            text, label = ctypes.c_char_p(), ctypes.c_char_p()
            self.lib.cuGetErrorString(result, ctypes.byref(text))
            self.lib.cuGetErrorName(result, ctypes.byref(label))
            raise CudaDriverError(f"{name} failed: {(label.value or b'?').decode()} "
                                  f"({(text.value or b'unknown error').decode()})")

    def ensure_context(self, ordinal=0):
        """Makes a context current: torch's, or the device's primary context (the one torch uses)."""
        current = ctypes.c_void_p()
        self.call("cuCtxGetCurrent", ctypes.byref(current))
        if current.value:
            return
        device, context = ctypes.c_int(), ctypes.c_void_p()
        self.call("cuDeviceGet", ctypes.byref(device), ordinal)
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(context), device)
        self.call("cuCtxSetCurrent", context)

    def open_ipc(self, handle_hex):
        """(device pointer, bytes mapped from it) of another process's allocation."""
        handle = handle_from_hex(handle_hex)
        ptr = CUdeviceptr()
        self.call("cuIpcOpenMemHandle_v2", ctypes.byref(ptr), handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        base, size = CUdeviceptr(), ctypes.c_size_t()
        try:
            self.call("cuMemGetAddressRange_v2", ctypes.byref(base), ctypes.byref(size), ptr)
        except CudaDriverError:
            self.close_ipc(ptr.value)
            raise
        return ptr.value, size.value - (ptr.value - base.value)

    def close_ipc(self, ptr):
        self.call("cuIpcCloseMemHandle", CUdeviceptr(ptr))


class DeviceView:
    """`count` elements of kforge dtype `dtype` at device address `ptr`, for torch.as_tensor."""

    def __init__(self, ptr, count, dtype):
        self.__cuda_array_interface__ = {"shape": (count,), "typestr": TYPESTR[dtype], "data": (ptr, False),
                                         "strides": None, "version": 2}


def device_tensor(torch, ptr, count, dtype):
    """A torch tensor viewing device memory (no copy)."""
    tensor = torch.as_tensor(DeviceView(ptr, count, dtype), device="cuda")
    return tensor.view(torch.bfloat16) if dtype == "bf16" else tensor
