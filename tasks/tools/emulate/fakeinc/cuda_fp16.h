// Stand-in for the toolkit header: the emulator declares the cuda_fp16.h types in cuda_emu.hpp.
#pragma once
