# flashc_add_bundle: compile a flashc spec into a bundle as a build step.
# Shipped with the package (find_package(flashc) includes it).
#
#   flashc_add_bundle(<target> SPEC <file.mlir> [ARCHS sm_80 sm_90a ...] [EMBED]
#                     [OUTPUT_DIR <dir>] [FLASHC_ARGS <arg>...])
#   flashc_add_bundle(<target> BUNDLE <dir> EMBED)
#
# The BUNDLE form embeds a bundle compiled elsewhere (no compiler needed: a
# runtime-only package on a GPU machine); its files are its dependencies.
#
# Runs the installed `flashc` (or FLASHC_COMPILER) on SPEC whenever SPEC or
# the compiler changes, and on nothing else: each bundle is its own build
# step, so editing one spec rebuilds that bundle alone.
#   without EMBED: <target> is a custom target (part of ALL) that makes the
#     bundle directory OUTPUT_DIR (default <binary dir>/<target>.bundle); its
#     path is in <target>_BUNDLE_DIR and the target's FLASHC_BUNDLE_DIR property.
#     Make your executable depend on it (add_dependencies) and open the directory.
#   EMBED: <target> is a static library holding the bundle as a blob (manifest,
#     source, cubins: docs/bundle.md). Link it, include "<target>_bundle.h" and
#     open it with flashc_bundle_open_memory(<target>_bundle, <target>_bundle_size,
#     &bundle) (in the symbol names, characters other than [A-Za-z0-9_] of
#     <target> become '_'). The deployed program carries no bundle files.
# ARCHS defaults to flashc's default (sm_90a); several make a multi-arch bundle.
include_guard(GLOBAL)

function(flashc_add_bundle target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "EMBED" "SPEC;BUNDLE;OUTPUT_DIR" "ARCHS;FLASHC_ARGS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "flashc_add_bundle(${target}): unknown arguments: ${arg_UNPARSED_ARGUMENTS} "
                        "(expected SPEC <file.mlir> [ARCHS <arch>...] [EMBED] [OUTPUT_DIR <dir>] [FLASHC_ARGS <arg>...], "
                        "or BUNDLE <dir> EMBED)")
  endif()
  if(arg_SPEC AND arg_BUNDLE)
    message(FATAL_ERROR "flashc_add_bundle(${target}): give SPEC (compile a spec) or BUNDLE (embed a compiled bundle), not both")
  endif()
  if(arg_BUNDLE)
    if(NOT arg_EMBED)
      message(FATAL_ERROR "flashc_add_bundle(${target} BUNDLE ...): a compiled bundle is only embedded: add EMBED")
    endif()
    get_filename_component(dir "${arg_BUNDLE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${dir}/manifest.flashc")
      message(FATAL_ERROR "flashc_add_bundle(${target}): BUNDLE ${dir} is not a bundle (no manifest.flashc)")
    endif()
    file(GLOB_RECURSE bundle_files CONFIGURE_DEPENDS "${dir}/*")
    _flashc_embed_bundle(${target} "${dir}" ${bundle_files})
    set(${target}_BUNDLE_DIR "${dir}" PARENT_SCOPE)
    return()
  endif()
  if(NOT arg_SPEC)
    message(FATAL_ERROR "flashc_add_bundle(${target}): SPEC <file.mlir> (or BUNDLE <dir> EMBED) is required")
  endif()
  get_filename_component(spec "${arg_SPEC}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${spec}")
    message(FATAL_ERROR "flashc_add_bundle(${target}): SPEC ${spec} does not exist")
  endif()

  # The compiler: FLASHC_COMPILER if set, else `flashc` in this package's bin/, else on PATH.
  get_filename_component(prefix "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../../.." ABSOLUTE)
  if(NOT FLASHC_COMPILER)
    find_program(FLASHC_COMPILER flashc HINTS "${prefix}/bin"
                 DOC "The flashc compiler flashc_add_bundle runs")
  endif()
  if(NOT FLASHC_COMPILER OR NOT EXISTS "${FLASHC_COMPILER}")
    message(FATAL_ERROR
      "flashc_add_bundle(${target}): no flashc compiler found (FLASHC_COMPILER='${FLASHC_COMPILER}'; "
      "looked in ${prefix}/bin and on PATH). This flashc package has the runtime only: install a full "
      "flashc build (with the compiler), or pass -DFLASHC_COMPILER=/path/to/flashc.")
  endif()

  set(args "")
  if(arg_ARCHS)
    list(JOIN arg_ARCHS "," archs)
    list(APPEND args "--arch=${archs}")
  endif()
  list(APPEND args ${arg_FLASHC_ARGS})
  if(arg_OUTPUT_DIR)
    get_filename_component(dir "${arg_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  else()
    set(dir "${CMAKE_CURRENT_BINARY_DIR}/${target}.bundle")
  endif()
  file(RELATIVE_PATH spec_rel "${CMAKE_SOURCE_DIR}" "${spec}")
  # The manifest stands for the directory: flashc writes it with every other file.
  add_custom_command(
    OUTPUT "${dir}/manifest.flashc"
    COMMAND "${FLASHC_COMPILER}" "${spec}" -o "${dir}" ${args}
    DEPENDS "${spec}" "${FLASHC_COMPILER}"
    COMMENT "flashc: compiling bundle ${target} from ${spec_rel}"
    VERBATIM)

  if(NOT arg_EMBED)
    add_custom_target(${target} ALL DEPENDS "${dir}/manifest.flashc")
    set_target_properties(${target} PROPERTIES FLASHC_BUNDLE_DIR "${dir}")
    set(${target}_BUNDLE_DIR "${dir}" PARENT_SCOPE)
    return()
  endif()

  _flashc_embed_bundle(${target} "${dir}" "${dir}/manifest.flashc")
  set(${target}_BUNDLE_DIR "${dir}" PARENT_SCOPE)
endfunction()

# <target>: a static library holding bundle directory `dir` as a blob; ARGN: what the blob depends on.
function(_flashc_embed_bundle target dir)
  if(NOT TARGET flashc::pack)
    message(FATAL_ERROR "flashc_add_bundle(${target} EMBED): the package has no flashc-pack (flashc::pack)")
  endif()
  string(MAKE_C_IDENTIFIER "${target}_bundle" symbol)
  set(gen "${CMAKE_CURRENT_BINARY_DIR}/${target}.embed")
  set(source "${gen}/${target}_bundle.cpp")
  set(header "${gen}/include/${target}_bundle.h")
  # flashc-pack rewrites its outputs only when the blob changed; the source
  # depends on the manifest, which flashc rewrites with the cubins.
  add_custom_command(
    OUTPUT "${source}" "${header}"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${gen}/include"
    COMMAND flashc::pack "${dir}" --cpp "${source}" --header "${header}" --symbol "${symbol}"
    DEPENDS ${ARGN} flashc::pack
    COMMENT "flashc: embedding bundle ${target}"
    VERBATIM)
  add_library(${target} STATIC "${source}" "${header}")
  target_include_directories(${target} PUBLIC "${gen}/include")
  set_target_properties(${target} PROPERTIES FLASHC_BUNDLE_DIR "${dir}" LINKER_LANGUAGE CXX)
endfunction()
