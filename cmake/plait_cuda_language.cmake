# Enables the CUDA language only when something in the tree needs nvcc (a .cu
# example, a CUDA test, a CUDA header to self-check) and the toolkit is present.
# nvcc usually lives in /usr/local/cuda/bin, which is not on PATH, so when the
# user did not name a CUDA compiler we take the toolkit's own nvcc.
#
# A macro, not a function: enable_language() must run at directory scope.
macro(plait_enable_cuda_language_if_needed)
  set(PLAIT_CUDA_LANGUAGE OFF)
  file(GLOB_RECURSE _plait_cuda_users CONFIGURE_DEPENDS
       "${PROJECT_SOURCE_DIR}/examples/*.cu" "${PROJECT_SOURCE_DIR}/tests/*.cu" "${PROJECT_SOURCE_DIR}/bench/*.cu"
       "${PROJECT_SOURCE_DIR}/include/plait/*.cuh" "${PROJECT_SOURCE_DIR}/include/plait/cuda.hpp"
       "${PROJECT_SOURCE_DIR}/include/plait/cuda/*.hpp" "${PROJECT_SOURCE_DIR}/include/plait/transport/cuda/*.hpp")
  if(_plait_cuda_users AND PLAIT_HAS_CUDA)
    if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
      if(CUDAToolkit_NVCC_EXECUTABLE AND EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
        set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}" CACHE FILEPATH "CUDA compiler")
      elseif(EXISTS "/usr/local/cuda/bin/nvcc")
        set(CMAKE_CUDA_COMPILER "/usr/local/cuda/bin/nvcc" CACHE FILEPATH "CUDA compiler")
      endif()
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
      enable_language(CUDA)
      # nvcc defaults to C++17; plait's headers need C++20. (cxx_std_20 on
      # plait::plait covers only the CXX language.)
      # CMake < 3.26 does not know nvcc's C++20 flag; nvcc >= 12 has it.
      if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA"
         AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
        set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
        set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      endif()
      if(NOT DEFINED CMAKE_CUDA_STANDARD)
        set(CMAKE_CUDA_STANDARD 20)
        set(CMAKE_CUDA_STANDARD_REQUIRED ON)
      endif()
      set(PLAIT_CUDA_LANGUAGE ON)
    else()
      message(STATUS "plait: CUDA sources present but no working CUDA compiler; they are skipped")
    endif()
  endif()
  unset(_plait_cuda_users)
endmacro()
