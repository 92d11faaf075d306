# Runs one compile-fail case (cmake -P). A case is a section of a
# tests/compile_fail/*.cpp file:
#
#   // expect-error(no_isend): plait: transport lacks `request isend
#   #if defined(PLAIT_CASE_no_isend)
#   ...code that must not compile...
#   #endif
#
# With CASE set, the test passes only if the compiler rejects the file with
# -DPLAIT_CASE_<CASE> AND its output matches the case's regex (a CMake regex),
# so a file that fails for an unrelated reason (a typo, a missing include)
# does not pass by accident. With CASE empty, the file must compile cleanly:
# that proves the fixture around the cases is itself valid.
#
# A case may also bound the length of the diagnostic, so that a precise
# static_assert does not come buried in an overload dump:
#
#   // max-lines(no_isend): 20
#
# Inputs: COMPILER, SOURCE, INCLUDE_DIR, CASE, optional EXTRA_FLAGS (a ;-list).
foreach(var COMPILER SOURCE INCLUDE_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "plait_compile_fail.cmake: ${var} not set")
  endif()
endforeach()

set(flags -std=c++20 -fsyntax-only "-I${INCLUDE_DIR}" ${EXTRA_FLAGS})
# PCH_DIR (optional): a precompiled plait/plait.hpp there is forced in first
# (tests/compile_fail/CMakeLists.txt); without a usable one the header is parsed.
# A source that defines macros plait's headers read, before including them,
# says `// no-precompiled-header`: the forced header would come first.
file(STRINGS "${SOURCE}" no_pch REGEX "^[ \t]*//[ \t]*no-precompiled-header")
if(DEFINED PCH_DIR AND EXISTS "${PCH_DIR}/plait/plait.hpp.gch" AND NOT no_pch)
  set(flags -std=c++20 -fsyntax-only "-I${PCH_DIR}" "-I${INCLUDE_DIR}" -include plait/plait.hpp -Winvalid-pch
            ${EXTRA_FLAGS})
endif()
if(COMPILER MATCHES "clang")
  list(APPEND flags -fno-color-diagnostics)
else()
  list(APPEND flags -fdiagnostics-color=never)
endif()

if(CASE STREQUAL "")
  execute_process(COMMAND "${COMPILER}" ${flags} "${SOURCE}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "FAIL: ${SOURCE} without any PLAIT_CASE_* must compile, but:\n${out}")
  endif()
  message(STATUS "PASS: ${SOURCE} compiles with no case selected")
  return()
endif()

# The regex is read from the source, not passed on the command line, so it
# may hold quotes, backticks and semicolons.
file(STRINGS "${SOURCE}" lines REGEX "^[ \t]*//[ \t]*expect-error\\(${CASE}\\):")
list(LENGTH lines n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "FAIL: ${SOURCE} needs exactly one `// expect-error(${CASE}): <regex>` line, found ${n}")
endif()
string(REGEX REPLACE "^[ \t]*//[ \t]*expect-error\\(${CASE}\\):[ \t]*" "" regex "${lines}")
string(STRIP "${regex}" regex)
if(regex STREQUAL "")
  message(FATAL_ERROR "FAIL: ${SOURCE}: case ${CASE} has an empty regex")
endif()

execute_process(COMMAND "${COMPILER}" ${flags} "-DPLAIT_CASE_${CASE}" "${SOURCE}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "FAIL: ${SOURCE} case ${CASE} compiled, but it must be rejected with /${regex}/")
endif()
if(NOT out MATCHES "${regex}")
  message(FATAL_ERROR "FAIL: ${SOURCE} case ${CASE} was rejected, but not with /${regex}/:\n${out}")
endif()
file(STRINGS "${SOURCE}" limit_lines REGEX "^[ \t]*//[ \t]*max-lines\\(${CASE}\\):")
if(limit_lines)
  string(REGEX REPLACE "^[ \t]*//[ \t]*max-lines\\(${CASE}\\):[ \t]*([0-9]+).*" "\\1" limit "${limit_lines}")
  string(REGEX MATCHALL "\n" newlines "${out}")
  list(LENGTH newlines line_count)
  if(line_count GREATER limit)
    message(FATAL_ERROR "FAIL: ${SOURCE} case ${CASE}: the diagnostic has ${line_count} lines, more than ${limit}:\n${out}")
  endif()
  message(STATUS "PASS: ${SOURCE} case ${CASE}: ${line_count} lines of diagnostic (at most ${limit})")
endif()
message(STATUS "PASS: ${SOURCE} case ${CASE} rejected with /${regex}/")
