# Keeps include/plait/version.hpp honest: its macros must spell the same
# version as project(VERSION), or configuration stops. Code that tests
# PLAIT_VERSION and packages that read plaitConfigVersion.cmake then agree.
function(plait_check_version_header header)
  file(STRINGS "${header}" lines REGEX "^#define PLAIT_VERSION_(MAJOR|MINOR|PATCH) [0-9]+")
  foreach(part MAJOR MINOR PATCH)
    set(value "")
    foreach(line IN LISTS lines)
      if(line MATCHES "^#define PLAIT_VERSION_${part} ([0-9]+)")
        set(value "${CMAKE_MATCH_1}")
      endif()
    endforeach()
    if(value STREQUAL "")
      message(FATAL_ERROR "plait: ${header} does not define PLAIT_VERSION_${part}")
    endif()
    set(header_${part} "${value}")
  endforeach()
  set(header_version "${header_MAJOR}.${header_MINOR}.${header_PATCH}")
  if(NOT header_version VERSION_EQUAL PROJECT_VERSION)
    message(FATAL_ERROR "plait: ${header} says ${header_version} but project(VERSION) says ${PROJECT_VERSION}; "
                        "update one to match the other")
  endif()
endfunction()
