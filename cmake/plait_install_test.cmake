# install.find_package (cmake -P): proves that an installed plait is usable
# by a project that knows nothing of this source tree.
#   1. cmake --install BUILD_DIR into a fresh prefix,
#   2. configure tests/install with only that prefix on CMAKE_PREFIX_PATH,
#   3. build it and run its program (which verifies an all-gather), header-only
#      and with the compiled core (<plait/src.hpp> in one of its files).
# Inputs: BUILD_DIR SOURCE_DIR WORK_DIR WITH_MPI CXX_COMPILER GENERATOR CONFIG.
set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${step} failed (${rc}):\n${ARGN}\n${out}")
  endif()
  message(STATUS "install test: ${step}: ok")
endfunction()

set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
run("install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}" ${config_args})
if(NOT EXISTS "${prefix}/include/plait/plait.hpp")
  message(FATAL_ERROR "install test: ${prefix}/include/plait/plait.hpp was not installed")
endif()

set(build_type "${CONFIG}")
if(NOT build_type)
  set(build_type RelWithDebInfo)
endif()
run("configure" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_BUILD_TYPE=${build_type}"
    "-DPLAIT_WITH_MPI=${WITH_MPI}" "-DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON")
run("build" "${CMAKE_COMMAND}" --build "${build}" ${config_args})
run("run" "${build}/plait_consumer")
run("run compiled core" "${build}/plait_consumer_compiled")
