# Test registration for plait. Engineers add tests without touching CMake:
# every tests/test_*.cpp (or .cu) becomes one Catch2 executable named like the
# file, and a few comment markers among its first lines describe it:
#
#   // plait-test-labels: quick shm sanitize   (default: quick)
#   // plait-test-timeout: 300                 (seconds per test case; default: 120)
#   // plait-test-needs: mpi                   (links plait::mpi; built only when MPI is found)
#   // plait-test-needs: cuda                  (links plait::cuda; built only when the toolkit is found)
#   // plait-test-needs: gpu                   (also: registered only when a GPU is visible)
#   // plait-test-needs: openmp                (links OpenMP::OpenMP_CXX; built only when OpenMP is found)
#   // plait-test-also: header-only            (also built as <name>_header_only against the header-only
#                                                library; not in the sanitizer builds)
#   // plait-test-also: avx2                   (also built as <name>_avx2 with -mavx2: the reduction kernels'
#                                                32-byte vector path; only where the compiler takes the flag
#                                                and the configuring machine runs AVX2)
#   // plait-test-optimization: -O1            (this file's flag instead of PLAIT_TEST_OPTIMIZATION, for
#                                                tests whose own loops are most of their run time)
#
# A test links plait::compiled, the separately compiled core (plait/core/config.hpp):
# header-only, every test file compiled the shm transport and the executor again,
# about half of a test file's compile time (ASan+UBSan: 25 s of 36 s for
# test_all_gather). Both modes run the same code; the tests marked
# `also: header-only`, the header check (which also links its header-only
# objects into one program), the examples, the documentation's blocks and the
# install test keep the header-only mode covered.
#
# Labels: `quick` runs in CI (scripts/test), `full` only in scripts/test-full,
# `sanitize` is what the asan/tsan presets build and run. Every test case gets
# a TIMEOUT, so a hang fails the run instead of stalling it.
#
# Single test cases opt out of a build through Catch2 tags and PLAIT_TEST_SPEC,
# the Catch2 test spec every executable's cases are discovered with: the tsan
# preset sets `~[one-thread]~[large]`, so cases tagged [one-thread] (one
# thread of one process throughout: nothing for ThreadSanitizer to find) and
# [large] (8 MiB of volume through the chunk and single-copy protocols that
# smaller sanitize cases run as well; TSan's checked copies made them 94
# of the tsan run's 436 test seconds) are not registered there. They still
# run in the default and asan builds.

set(PLAIT_DEFAULT_TEST_TIMEOUT 120)
set(PLAIT_DEFAULT_TEST_LABELS quick)
set(PLAIT_TEST_SPEC "" CACHE STRING "Catch2 test spec the test cases are discovered with (empty: every case)")

# OpenMP, for tests that need it (Thrust's OMP back end); optional.
if(NOT TARGET OpenMP::OpenMP_CXX)
  find_package(OpenMP COMPONENTS CXX QUIET)
endif()

# One nvidia-smi probe per configure decides whether `gpu` tests are registered;
# CUDA code is still compiled and linked without a GPU.
if(NOT DEFINED PLAIT_HAVE_GPU)
  set(_plait_have_gpu OFF)
  find_program(PLAIT_NVIDIA_SMI nvidia-smi)
  if(PLAIT_NVIDIA_SMI)
    execute_process(COMMAND "${PLAIT_NVIDIA_SMI}" -L RESULT_VARIABLE _plait_smi_rc OUTPUT_QUIET ERROR_QUIET)
    if(_plait_smi_rc EQUAL 0)
      set(_plait_have_gpu ON)
    endif()
  endif()
  set(PLAIT_HAVE_GPU ${_plait_have_gpu} CACHE BOOL "A CUDA GPU is visible, so GPU tests are registered")
endif()

# plait_label_selected(<out-var> <labels...>): TRUE when PLAIT_TEST_LABEL_FILTER
# is empty or is one of the labels. The sanitizer presets set the filter so
# they compile only the tests worth running under a sanitizer.
function(plait_label_selected out)
  if(PLAIT_TEST_LABEL_FILTER STREQUAL "" OR PLAIT_TEST_LABEL_FILTER IN_LIST ARGN)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# plait_read_markers(<file> <prefix>): sets <prefix>_LABELS, <prefix>_TIMEOUT
# and <prefix>_NEEDS from `// <marker-prefix>-labels:` style comment lines in
# the first 30 lines of <file>. MARKER selects the marker family (plait-test or
# plait-example).
function(plait_read_markers file prefix marker)
  file(STRINGS "${file}" head LIMIT_COUNT 30)
  set(labels "")
  set(timeout "")
  set(needs "")
  set(also "")
  set(optimization "")
  foreach(line IN LISTS head)
    if(line MATCHES "^[ \t]*//[ \t]*${marker}-labels:(.*)$")
      separate_arguments(more UNIX_COMMAND "${CMAKE_MATCH_1}")
      list(APPEND labels ${more})
    elseif(line MATCHES "^[ \t]*//[ \t]*${marker}-timeout:[ \t]*([0-9]+)[ \t]*$")
      set(timeout "${CMAKE_MATCH_1}")
    elseif(line MATCHES "^[ \t]*//[ \t]*${marker}-needs:(.*)$")
      separate_arguments(more UNIX_COMMAND "${CMAKE_MATCH_1}")
      list(APPEND needs ${more})
    elseif(line MATCHES "^[ \t]*//[ \t]*${marker}-also:(.*)$")
      separate_arguments(more UNIX_COMMAND "${CMAKE_MATCH_1}")
      list(APPEND also ${more})
    elseif(line MATCHES "^[ \t]*//[ \t]*${marker}-optimization:[ \t]*(-O[0-3gs])[ \t]*$")
      set(optimization "${CMAKE_MATCH_1}")
    elseif(line MATCHES "^[ \t]*//[ \t]*${marker}-")
      message(FATAL_ERROR "plait: ${file}: unknown marker line `${line}`")
    endif()
  endforeach()
  foreach(need IN LISTS needs)
    if(NOT need MATCHES "^(mpi|cuda|gpu|openmp)$")
      message(FATAL_ERROR "plait: ${file}: unknown need `${need}` (known: mpi cuda gpu openmp)")
    endif()
  endforeach()
  set(${prefix}_LABELS "${labels}" PARENT_SCOPE)
  set(${prefix}_TIMEOUT "${timeout}" PARENT_SCOPE)
  foreach(variant IN LISTS also)
    if(NOT variant MATCHES "^(header-only|avx2)$")
      message(FATAL_ERROR "plait: ${file}: unknown variant `${variant}` (known: header-only avx2)")
    endif()
  endforeach()
  set(${prefix}_NEEDS "${needs}" PARENT_SCOPE)
  set(${prefix}_ALSO "${also}" PARENT_SCOPE)
  set(${prefix}_OPTIMIZATION "${optimization}" PARENT_SCOPE)
endfunction()

# plait_needs_met(<out-var> <needs...>): whether this build can satisfy them.
function(plait_needs_met out)
  set(ok TRUE)
  foreach(need IN LISTS ARGN)
    if(need STREQUAL "mpi" AND NOT PLAIT_HAS_MPI)
      set(ok FALSE)
    elseif(need MATCHES "^(cuda|gpu)$" AND NOT PLAIT_HAS_CUDA)
      set(ok FALSE)
    elseif(need STREQUAL "openmp" AND NOT TARGET OpenMP::OpenMP_CXX)
      set(ok FALSE)
    endif()
  endforeach()
  set(${out} ${ok} PARENT_SCOPE)
endfunction()

# plait_can_run_avx2(<out-var>): whether this compiler takes -mavx2 and this
# machine runs what it builds with it (checked once per configure).
function(plait_can_run_avx2 out)
  if(NOT DEFINED PLAIT_CAN_RUN_AVX2)
    include(CheckCXXSourceRuns)
    set(CMAKE_REQUIRED_FLAGS -mavx2)
    set(CMAKE_REQUIRED_QUIET ON)
    check_cxx_source_runs("
      using floats [[gnu::vector_size(32)]] = float;
      int main(int argc, char**) {
        volatile float seed = static_cast<float>(argc);
        floats x = {seed, seed, seed, seed, seed, seed, seed, seed};
        floats y = x + x;
        return y[7] == 2 * seed ? 0 : 1;
      }" PLAIT_CAN_RUN_AVX2)
  endif()
  set(${out} ${PLAIT_CAN_RUN_AVX2} PARENT_SCOPE)
endfunction()

# plait_override_test_optimization(<target> <-Ox> [<out_var>]): compiles
# <target>'s C++ at <-Ox> instead of PLAIT_TEST_OPTIMIZATION, where that is
# set (tests/CMakeLists.txt; the sanitizer presets leave it empty and every
# test keeps their -O1); <out_var>, if given, says whether it did, since the
# flags then differ from the test precompiled header's. The flag goes after
# the directory's on the command line: the last -O wins.
function(plait_override_test_optimization target flag)
  set(overridden OFF)
  if(PLAIT_TEST_OPTIMIZATION AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${flag}>")
    set(overridden ON)
  endif()
  if(ARGC GREATER 2)
    set(${ARGV2} ${overridden} PARENT_SCOPE)
  endif()
endfunction()

# plait_add_catch_test needs Catch.cmake included at directory scope (its
# discovery script path is a directory variable); tests/CMakeLists.txt does it.
# plait_add_catch_test(<name> SOURCES <src...> [LABELS <l...>] [TIMEOUT <s>] [NEEDS <n...>]
#                      [ALSO header-only|avx2] [HEADER_ONLY] [OPTIMIZATION <-Ox>] [FLAGS <flag...>])
# One Catch2 executable linked with the shared main and the compiled core,
# registered test case by test case as `<name>.<case>`. Usable from tests/mpi/
# and other subdirectories. HEADER_ONLY builds against the header-only library
# instead; ALSO header-only adds that variant as `<name>_header_only`, ALSO
# avx2 one compiled with -mavx2 as `<name>_avx2`; FLAGS are the test source's
# own compile options.
function(plait_add_catch_test name)
  cmake_parse_arguments(arg "HEADER_ONLY" "TIMEOUT;OPTIMIZATION" "SOURCES;LABELS;NEEDS;ALSO;FLAGS" ${ARGN})
  if("avx2" IN_LIST arg_ALSO AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    plait_can_run_avx2(avx2)
    if(avx2)
      plait_add_catch_test(${name}_avx2 SOURCES ${arg_SOURCES} LABELS ${arg_LABELS} TIMEOUT "${arg_TIMEOUT}"
                           NEEDS ${arg_NEEDS} OPTIMIZATION "${arg_OPTIMIZATION}" FLAGS -mavx2)
    endif()
  endif()
  if("header-only" IN_LIST arg_ALSO)
    set(header_only_labels ${arg_LABELS})
    list(REMOVE_ITEM header_only_labels sanitize)
    if(header_only_labels)
      plait_add_catch_test(${name}_header_only SOURCES ${arg_SOURCES} LABELS ${header_only_labels}
                           TIMEOUT "${arg_TIMEOUT}" NEEDS ${arg_NEEDS} OPTIMIZATION "${arg_OPTIMIZATION}" HEADER_ONLY)
    endif()
  endif()
  if(NOT arg_LABELS)
    set(arg_LABELS ${PLAIT_DEFAULT_TEST_LABELS})
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT ${PLAIT_DEFAULT_TEST_TIMEOUT})
  endif()
  plait_label_selected(selected ${arg_LABELS})
  plait_needs_met(met ${arg_NEEDS})
  if(NOT selected)
    return()
  endif()
  if(NOT PLAIT_BUILD_FULL_TESTS AND "full" IN_LIST arg_LABELS AND NOT "quick" IN_LIST arg_LABELS)
    return()
  endif()
  if(NOT met)
    message(STATUS "plait: skipping ${name} (needs: ${arg_NEEDS})")
    return()
  endif()
  foreach(src IN LISTS arg_SOURCES)
    if(src MATCHES "\\.cu$" AND NOT PLAIT_CUDA_LANGUAGE)
      message(STATUS "plait: skipping ${name} (no CUDA compiler for ${src})")
      return()
    endif()
  endforeach()

  add_executable(${name} ${arg_SOURCES})
  target_link_libraries(${name} PRIVATE plait::plait plait_catch_main plait_warnings)
  target_include_directories(${name} PRIVATE "${PROJECT_SOURCE_DIR}/tests")
  set(own_flags OFF)
  if(arg_OPTIMIZATION)
    plait_override_test_optimization(${name} "${arg_OPTIMIZATION}" own_flags)
  endif()
  if(arg_FLAGS)
    target_compile_options(${name} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${arg_FLAGS}>")
    set(own_flags ON)
  endif()
  # The shared precompiled header (tests/CMakeLists.txt), for test files
  # compiled with exactly its flags.
  if(TARGET plait_test_pch AND NOT own_flags AND NOT arg_HEADER_ONLY AND NOT arg_NEEDS)
    target_precompile_headers(${name} REUSE_FROM plait_test_pch)
  endif()
  if(NOT arg_HEADER_ONLY)
    target_link_libraries(${name} PRIVATE plait::compiled)
  endif()
  if("mpi" IN_LIST arg_NEEDS)
    target_link_libraries(${name} PRIVATE plait::mpi)
  endif()
  if("cuda" IN_LIST arg_NEEDS OR "gpu" IN_LIST arg_NEEDS)
    target_link_libraries(${name} PRIVATE plait::cuda)
  endif()
  if("openmp" IN_LIST arg_NEEDS)
    target_link_libraries(${name} PRIVATE OpenMP::OpenMP_CXX)
  endif()
  if("gpu" IN_LIST arg_NEEDS)
    list(APPEND arg_LABELS gpu)
    if(NOT PLAIT_HAVE_GPU)
      # Compiled and linked so the code is checked, but there is nothing to run it on.
      message(STATUS "plait: ${name} built but not registered (no GPU visible)")
      return()
    endif()
  endif()

  set(spec "")
  if(PLAIT_TEST_SPEC)
    set(spec TEST_SPEC "${PLAIT_TEST_SPEC}")
  endif()
  catch_discover_tests(${name} TEST_PREFIX "${name}." ${spec} PROPERTIES TIMEOUT ${arg_TIMEOUT})

  # Catch.cmake forwards PROPERTIES through a -D list and then splices it
  # unquoted, so a multi-label LABELS value would split into bogus property
  # names. Labels are therefore set by a second include file that CTest reads
  # after the discovered list (TEST_INCLUDE_FILES are read in order).
  set(labels_file "${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake")
  file(CONFIGURE OUTPUT "${labels_file}" CONTENT
"if(DEFINED ${name}_TESTS)
  set_tests_properties(\${${name}_TESTS} PROPERTIES LABELS \"${arg_LABELS}\")
endif()
" @ONLY)
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${labels_file}")
endfunction()

# plait_add_catch_test_from_file(<source>): the self-describing convention.
function(plait_add_catch_test_from_file source)
  get_filename_component(name "${source}" NAME_WLE)
  plait_read_markers("${source}" test plait-test)
  plait_add_catch_test(${name} SOURCES "${source}" LABELS ${test_LABELS} TIMEOUT "${test_TIMEOUT}" NEEDS ${test_NEEDS}
                       ALSO ${test_ALSO} OPTIMIZATION "${test_OPTIMIZATION}")
endfunction()

# Sets <out_var> to the flags mpiexec needs to start more ranks than cores:
# Open MPI refuses without --oversubscribe, MPICH oversubscribes by default and
# rejects the flag. Used by every test that starts mpiexec (tests/mpi, the
# MPI examples, bench.smoke).
function(plait_mpiexec_oversubscribe_flags out_var)
  if(NOT PLAIT_MPIEXEC_CHECKED STREQUAL MPIEXEC_EXECUTABLE)
    execute_process(COMMAND "${MPIEXEC_EXECUTABLE}" --version OUTPUT_VARIABLE version ERROR_VARIABLE version
                    RESULT_VARIABLE rc)
    if(version MATCHES "Open MPI|OpenRTE")
      set(is_open_mpi ON)
    else()
      set(is_open_mpi OFF)
    endif()
    set(PLAIT_MPIEXEC_IS_OPEN_MPI ${is_open_mpi} CACHE INTERNAL "mpiexec is Open MPI's")
    set(PLAIT_MPIEXEC_CHECKED "${MPIEXEC_EXECUTABLE}" CACHE INTERNAL "the mpiexec PLAIT_MPIEXEC_IS_OPEN_MPI is about")
  endif()
  if(PLAIT_MPIEXEC_IS_OPEN_MPI)
    set(${out_var} --oversubscribe PARENT_SCOPE)
  else()
    set(${out_var} "" PARENT_SCOPE)
  endif()
endfunction()
