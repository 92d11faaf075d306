# plait_warnings: the warning flags every test, example and benchmark builds
# with. It is deliberately not linked into plait::plait and not exported:
# consumers choose their own warnings, and -Werror must never break their build
# when a newer compiler adds a warning.
if(NOT TARGET plait_warnings)
  add_library(plait_warnings INTERFACE)
  target_compile_options(
    plait_warnings
    INTERFACE
      "$<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU,Clang,AppleClang>>:-Wall;-Wextra;-Wpedantic;-Werror>"
      # nvcc forwards host warnings with -Xcompiler; --Werror all-warnings makes
      # its own (device-side) warnings fatal too.
      "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Werror;--Werror=all-warnings>")
endif()
