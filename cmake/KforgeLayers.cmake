# kforge_add_layer(NAME <target> FOLDER <dir> PREFIX <include prefix> SOURCES ... LINKS ...)
#
# Creates the static library of one layer. Its public include root is a folder in the build tree
# that contains one symbolic link, <prefix> -> <dir>, so dependants write `#include "<prefix>/x.hpp"`
# and see exactly the layers they link, nothing more.
function(kforge_add_layer)
    cmake_parse_arguments(ARG "" "NAME;FOLDER;PREFIX" "SOURCES;LINKS;PRIVATE_LINKS" ${ARGN})
    set(root ${CMAKE_BINARY_DIR}/layers/${ARG_NAME})
    file(MAKE_DIRECTORY ${root})
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
endfunction()

# Warnings are errors on our own code (KFORGE_WERROR); never on system headers.
function(kforge_warnings target)
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                             -Wimplicit-fallthrough -Wno-missing-field-initializers)
    if(KFORGE_WERROR)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
endfunction()
