# flashc_add_bundle from an installed package: installs the build (runtime,
# compiler, CMake package), builds a small project that compiles two specs at
# build time (one embedded, one a directory), runs it, and checks the
# dependencies: touching one spec recompiles that bundle alone; nothing
# changed, nothing runs. Then a configure without a compiler must fail with a
# clear message. CPU only.
# Inputs: BUILD_DIR, SOURCE_DIR, WORK_DIR, GENERATOR.
file(REMOVE_RECURSE ${WORK_DIR})
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_output "${out}${err}" PARENT_SCOPE)
endfunction()
function(expect what output)
  cmake_parse_arguments(arg "" "" "HAS;LACKS" ${ARGN})
  foreach(s IN LISTS arg_HAS)
    if(NOT output MATCHES "${s}")
      message(FATAL_ERROR "${what}: expected '${s}' in:\n${output}")
    endif()
  endforeach()
  foreach(s IN LISTS arg_LACKS)
    if(output MATCHES "${s}")
      message(FATAL_ERROR "${what}: did not expect '${s}' in:\n${output}")
    endif()
  endforeach()
  message(STATUS "ok: ${what}")
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(project ${SOURCE_DIR}/test/Runtime/cmake_bundle)
run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
set(specs ${WORK_DIR}/specs)
file(MAKE_DIRECTORY ${specs})
file(COPY_FILE ${SOURCE_DIR}/test/GPU/Inputs/attention_mqa_d32_bf16.mlir ${specs}/attn.mlir)
file(COPY_FILE ${SOURCE_DIR}/test/GPU/Inputs/ffn_bias_gelu_bf16.mlir ${specs}/ffn.mlir)

run("configure" ${CMAKE_COMMAND} -G ${GENERATOR} -S ${project} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix}
    -DSPEC_DIR=${specs} -DCMAKE_BUILD_TYPE=Release -DPREBUILT_BUNDLE=${SOURCE_DIR}/test/Runtime/bundles/multiarch)
run("first build" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
expect("the first build compiles both bundles with the installed flashc" "${last_output}"
       HAS "compiling bundle attn" "compiling bundle ffn" "embedding bundle attn" LACKS "embedding bundle ffn")
run("run the app" ${WORK_DIR}/build/app)
expect("the app opens the embedded bundles and the directory" "${last_output}"
       HAS "attn: [a-z_]+" "ffn: [a-z_]+" "prebuilt: [1-9][0-9]* kernels")

run("a second build" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
expect("nothing changed: nothing is compiled" "${last_output}" LACKS "compiling bundle" "embedding bundle")

# File times: let the clock move past the outputs' before touching a spec.
execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)
file(TOUCH ${specs}/ffn.mlir)
run("build after touching ffn.mlir" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
expect("touching ffn.mlir recompiles the ffn bundle alone" "${last_output}"
       HAS "compiling bundle ffn" LACKS "compiling bundle attn" "embedding bundle attn")

execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)
file(TOUCH ${specs}/attn.mlir)
run("build after touching attn.mlir" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
expect("touching attn.mlir recompiles and re-embeds attn alone" "${last_output}"
       HAS "compiling bundle attn" "embedding bundle attn" LACKS "compiling bundle ffn")
run("run the app again" ${WORK_DIR}/build/app)

# No compiler: a configure-time error that says what to do.
execute_process(COMMAND ${CMAKE_COMMAND} -G ${GENERATOR} -S ${project} -B ${WORK_DIR}/build-nocompiler
                        -DCMAKE_PREFIX_PATH=${prefix} -DSPEC_DIR=${specs} -DFLASHC_COMPILER=${WORK_DIR}/no/flashc
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "configuring with a missing compiler succeeded")
endif()
expect("a missing compiler is a configure error" "${out}${err}"
       HAS "flashc_add_bundle\\(attn\\): no flashc compiler found" "-DFLASHC_COMPILER=/path/to/flashc")
file(REMOVE_RECURSE ${WORK_DIR})
