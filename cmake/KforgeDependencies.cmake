# Every dependency comes from the system (Debian/Ubuntu packages, the CUDA toolkit). A missing one
# stops configure with the package to install, rather than a CMake search-path riddle.

# Stops configure: `what` is missing, and this is how to get it.
function(kforge_missing what debian_package)
    message(FATAL_ERROR
        "kforge needs ${what}, which was not found.\n"
        "  On Debian/Ubuntu: sudo apt-get install ${debian_package}\n"
        "  (./kf at the top of the source tree installs what is missing, then builds.)")
endfunction()

function(kforge_require package debian_package)
    find_package(${package} ${ARGN} QUIET)
    if(NOT ${package}_FOUND)
        kforge_missing(${package} ${debian_package})
    endif()
endfunction()

# The toolkit: NVRTC and CUPTI are linked; the driver (libcuda.so.1) is *not*, because kforge must
# start on machines without an NVIDIA driver. The GPU worker loads it at run time (evaluator/).
if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit 12.8 QUIET)
if(NOT CUDAToolkit_FOUND)
    message(FATAL_ERROR
        "kforge needs the CUDA Toolkit (>= 12.8, tested with 13.0): NVRTC, CUPTI and the driver API "
        "headers. Install it from NVIDIA (https://developer.nvidia.com/cuda-downloads) or point "
        "CUDAToolkit_ROOT at it (default /usr/local/cuda).")
endif()
foreach(target CUDA::nvrtc CUDA::cupti CUDA::cuda_driver)
    if(NOT TARGET ${target})
        message(FATAL_ERROR "The CUDA Toolkit at ${CUDAToolkit_LIBRARY_ROOT} lacks ${target}.")
    endif()
endforeach()
# The toolkit's library folder goes into the binary's run path: NVRTC and CUPTI are found there on
# machines where they are not in the loader's cache.
set(KFORGE_CUDA_LIBDIR ${CUDAToolkit_LIBRARY_DIR})

kforge_require(fmt libfmt-dev)
kforge_require(nlohmann_json nlohmann-json3-dev 3.10)
kforge_require(CLI11 libcli11-dev)
kforge_require(CURL libcurl4-openssl-dev)
kforge_require(Threads libc6-dev)

# xxHash is used header-only (XXH_INLINE_ALL), so nothing of it is needed at run time.
find_path(XXHASH_INCLUDE_DIR xxhash.h)
if(NOT XXHASH_INCLUDE_DIR)
    kforge_missing(xxHash libxxhash-dev)
endif()

# RE2 (linear-time regular expressions for patterns that come with shared task specs, util/regex)
# is linked statically too, for the same reason.
find_path(RE2_INCLUDE_DIR re2/re2.h)
find_library(RE2_STATIC_LIBRARY NAMES libre2.a)
if(NOT RE2_INCLUDE_DIR OR NOT RE2_STATIC_LIBRARY)
    kforge_missing("RE2 (header and static library)" libre2-dev)
endif()
add_library(kforge_re2 INTERFACE)
target_include_directories(kforge_re2 SYSTEM INTERFACE ${RE2_INCLUDE_DIR})
target_link_libraries(kforge_re2 INTERFACE ${RE2_STATIC_LIBRARY} Threads::Threads)

# SQLite is linked statically so the binary carries it to machines that lack libsqlite3.
find_path(SQLITE3_INCLUDE_DIR sqlite3.h)
find_library(SQLITE3_STATIC_LIBRARY NAMES libsqlite3.a)
if(NOT SQLITE3_INCLUDE_DIR OR NOT SQLITE3_STATIC_LIBRARY)
    kforge_missing("SQLite 3 (header and static library)" libsqlite3-dev)
endif()
add_library(kforge_sqlite3 INTERFACE)
target_include_directories(kforge_sqlite3 SYSTEM INTERFACE ${SQLITE3_INCLUDE_DIR})
target_link_libraries(kforge_sqlite3 INTERFACE ${SQLITE3_STATIC_LIBRARY} ${CMAKE_DL_LIBS} Threads::Threads m)

if(KFORGE_BUILD_TESTS)
    kforge_require(Catch2 catch2)
    find_path(HTTPLIB_INCLUDE_DIR httplib.h)
    find_library(HTTPLIB_LIBRARY NAMES cpp-httplib)
    if(NOT HTTPLIB_INCLUDE_DIR OR NOT HTTPLIB_LIBRARY)
        kforge_missing("cpp-httplib (the tests' mock LLM server)" libcpp-httplib-dev)
    endif()
endif()
