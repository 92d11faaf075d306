# Builds the fuzz target with clang (-fsanitize=fuzzer,address,undefined) and
# runs it for SECONDS seconds; any crash or sanitizer report fails the test.
execute_process(
  COMMAND ${CLANGXX} -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I${INCLUDE}
          ${SOURCE} -o ${WORK}/fuzz_shm_headers
  RESULT_VARIABLE built)
if(NOT built EQUAL 0)
  message(FATAL_ERROR "building the fuzzer failed (is libclang-rt-14-dev installed?)")
endif()
file(MAKE_DIRECTORY ${WORK}/fuzz-corpus)
execute_process(COMMAND ${WORK}/fuzz_shm_headers -max_total_time=${SECONDS} -rss_limit_mb=1024 ${WORK}/fuzz-corpus
                RESULT_VARIABLE ran)
if(NOT ran EQUAL 0)
  message(FATAL_ERROR "the fuzzer found a problem (exit ${ran}); the crashing input is in ${WORK}")
endif()
