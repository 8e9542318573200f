// Empty: the emulator defines the cp.async primitives (__pipeline_memcpy_async, __pipeline_commit,
// __pipeline_wait_prior) in cuda_emu.hpp.
