# source.deadlines: every deadline in include/ is made by plait::detail::after
# (include/plait/core/timeout.hpp), which saturates. `clock::now() + timeout`
# anywhere else wraps to the past for a timeout of hours::max(), and the wait
# times out at once. Fails listing each offending file and expression.
#
#   cmake -DINCLUDE_DIR=<repo>/include -P cmake/plait_deadline_check.cmake
if(NOT IS_DIRECTORY "${INCLUDE_DIR}/plait")
  message(FATAL_ERROR "plait: INCLUDE_DIR=${INCLUDE_DIR} has no plait/ headers")
endif()
file(GLOB_RECURSE headers "${INCLUDE_DIR}/plait/*.hpp" "${INCLUDE_DIR}/plait/*.ipp" "${INCLUDE_DIR}/plait/*.cuh"
     "${INCLUDE_DIR}/plait/*.h")
list(SORT headers)
set(offenders "")
foreach(header IN LISTS headers)
  file(RELATIVE_PATH shown "${INCLUDE_DIR}" "${header}")
  if(shown STREQUAL "plait/core/timeout.hpp")  # the helper itself
    continue()
  endif()
  file(READ "${header}" text)
  # `now() +` and `now()+`, also with the `+` on the next line.
  string(REGEX MATCHALL "[A-Za-z_:]*now\\(\\)[ \t\r\n]*\\+[^;\n]*" hits "${text}")
  foreach(hit IN LISTS hits)
    string(REGEX REPLACE "[ \t\r\n]+" " " hit "${hit}")
    string(APPEND offenders "\n  include/${shown}: ${hit}")
  endforeach()
endforeach()
if(offenders)
  message(FATAL_ERROR "plait: deadlines computed outside plait::detail::after (core/timeout.hpp), which would "
                      "overflow for a huge timeout; use detail::after(timeout) or deadline_from_now():${offenders}")
endif()
list(LENGTH headers count)
message(STATUS "plait: ${count} headers, every deadline made by detail::after")
