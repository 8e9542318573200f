// The library-step entry points of libkforge_vendor.so (vendor/kforge_vendor.h, "Library steps"),
// resolved by VendorLibrary when it loads the library and used by library_steps.cpp. Only the GPU
// worker's own files include this: the vendor's C interface stays out of the controller's headers.
#pragma once

#include "kforge_vendor.h"

namespace kforge {

struct VendorStepApi {
    decltype(&kforge_vendor_step_describe) describe = nullptr;
    decltype(&kforge_vendor_step_prepare) prepare = nullptr;
    decltype(&kforge_vendor_step_chosen) chosen = nullptr;
    decltype(&kforge_vendor_step_run) run = nullptr;
    decltype(&kforge_vendor_step_release) release = nullptr;
    decltype(&kforge_vendor_step_selftest) selftest = nullptr;
};

} // namespace kforge
