# loom_openblas_target(<var> <prefix> <who>): sets <var> to a target that
# links OpenBLAS (cblas) and adds its headers, from pkg-config or a search;
# <prefix> names the cache variables (<prefix>_LIBRARY, <prefix>_INCLUDE_DIR)
# and <who> says in the error what needs it.
function(loom_openblas_target var prefix who)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(${prefix} QUIET IMPORTED_TARGET openblas)
  endif()
  if(${prefix}_FOUND)
    set(${var} PkgConfig::${prefix} PARENT_SCOPE)
    return()
  endif()
  find_library(${prefix}_LIBRARY NAMES openblas)
  find_path(${prefix}_INCLUDE_DIR cblas.h
            PATH_SUFFIXES openblas openblas-pthread
                          x86_64-linux-gnu/openblas-pthread)
  if(NOT ${prefix}_LIBRARY OR NOT ${prefix}_INCLUDE_DIR)
    message(FATAL_ERROR
      "OpenBLAS (cblas) not found: ${who} needs it. Install it with "
      "scripts/setup.sh (Debian: libopenblas-dev), or point ${prefix}_LIBRARY "
      "and ${prefix}_INCLUDE_DIR at it.")
  endif()
  add_library(${prefix}Target INTERFACE)
  target_link_libraries(${prefix}Target INTERFACE ${${prefix}_LIBRARY})
  target_include_directories(${prefix}Target SYSTEM
                             INTERFACE ${${prefix}_INCLUDE_DIR})
  set(${var} ${prefix}Target PARENT_SCOPE)
endfunction()
