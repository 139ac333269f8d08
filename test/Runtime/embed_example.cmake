# Installs the runtime, builds examples/embed against the installed package
# with find_package(flashc), and runs it on the test bundle. Without a GPU the
# example must say so and exit 0; with one it must print PASSED.
# Inputs: BUILD_DIR, SOURCE_DIR, WORK_DIR, GENERATOR.
file(REMOVE_RECURSE ${WORK_DIR})
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
message(STATUS "installed the runtime into ${WORK_DIR}/prefix")
run("configure the example" ${CMAKE_COMMAND} -G ${GENERATOR} -S ${SOURCE_DIR}/examples/embed -B ${WORK_DIR}/build
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release)
run("build the example" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
message(STATUS "built examples/embed with find_package(flashc)")
# The installed runtime finds the installed device library (<prefix>/include) before the source tree.
run("run the example" ${CMAKE_COMMAND} -E env FLASHC_CACHE_DIR=${WORK_DIR}/cache
    ${WORK_DIR}/build/flashc_embed ${SOURCE_DIR}/test/Runtime/bundles/basic)
message(STATUS "example output:\n${last_output}")
if(NOT last_output MATCHES "PASSED" AND NOT last_output MATCHES "no GPU available")
  message(FATAL_ERROR "the example printed neither PASSED nor 'no GPU available'")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
