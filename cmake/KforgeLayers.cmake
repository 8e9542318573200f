# kforge_add_layer(NAME <target> FOLDER <dir> PREFIX <include prefix> SOURCES ... LINKS ...
#                  [PCH <header>])
#
# Creates the static library of one layer. Its public include root is a folder in the build tree
# that contains one symbolic link, <prefix> -> <dir>, so dependants write `#include "<prefix>/x.hpp"`
# and see exactly the layers they link, nothing more. Every layer compiles with a precompiled header
# of system headers: the shared one (kforge_pch, below) unless PCH names its own.
function(kforge_add_layer)
    cmake_parse_arguments(ARG "" "NAME;FOLDER;PREFIX;PCH" "SOURCES;LINKS;PRIVATE_LINKS" ${ARGN})
    set(root ${CMAKE_BINARY_DIR}/layers/${ARG_NAME})
    # A nested prefix (evaluator/worker) gets real parent folders holding only this link, so the
    # layer's dependants see that subfolder and not its siblings.
    get_filename_component(parent ${root}/${ARG_PREFIX} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${ARG_FOLDER} ${root}/${ARG_PREFIX} SYMBOLIC)
    if(NOT ARG_SOURCES)
        # A layer that is only headers (or not yet written) still takes its place in the graph.
        add_library(${ARG_NAME} INTERFACE)
        target_include_directories(${ARG_NAME} INTERFACE ${root})
        target_link_libraries(${ARG_NAME} INTERFACE ${ARG_LINKS} ${ARG_PRIVATE_LINKS})
        return()
    endif()
    add_library(${ARG_NAME} STATIC ${ARG_SOURCES})
    target_include_directories(${ARG_NAME} PUBLIC ${root})
    target_link_libraries(${ARG_NAME} PUBLIC ${ARG_LINKS} PRIVATE ${ARG_PRIVATE_LINKS})
    kforge_warnings(${ARG_NAME})
    if(ARG_PCH)
        target_precompile_headers(${ARG_NAME} PRIVATE ${ARG_PCH})
    else()
        target_precompile_headers(${ARG_NAME} REUSE_FROM kforge_pch)
    endif()
endfunction()

# Warnings are errors on our own code (KFORGE_WERROR); never on system headers.
function(kforge_warnings target)
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                             -Wimplicit-fallthrough -Wno-missing-field-initializers)
    if(KFORGE_WERROR)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
    # GCC 12's middle-end -Warray-bounds fires inside libstdc++'s string code when that code comes
    # from a precompiled header (which loses the system-header mark that normally silences it).
    # In a unity build every source is #included by a generated unit, so GCC takes a class defined
    # in a .cpp for one defined in a header and warns about its anonymous-namespace members.
    if(KFORGE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
        target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
    endif()
    # -Wstringop-overflow is the same middle-end false positive (a std::string built from a long
    # literal, "writing 2002 bytes into a region of size 16"), and which unity batch it fires in
    # depends on which files share the batch, i.e. on every file added to a folder.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
        target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overflow)
    endif()
endfunction()

# The layers' shared precompiled header (cmake/pch/common.hpp), built once in a target of its own
# with the flags every layer library has (static, position-independent, kforge's warnings), so that
# each layer can reuse it. GCC refuses a precompiled header built with other flags, and
# -Winvalid-pch (added by CMake) with -Werror makes such a mismatch a build error, not a slow build.
add_library(kforge_pch OBJECT ${CMAKE_CURRENT_LIST_DIR}/pch/layers.cpp)
target_link_libraries(kforge_pch PRIVATE fmt::fmt nlohmann_json::nlohmann_json)
target_precompile_headers(kforge_pch PRIVATE ${CMAKE_CURRENT_LIST_DIR}/pch/common.hpp)
kforge_warnings(kforge_pch)
