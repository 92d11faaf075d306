# docs.reference: the API reference (docs/Doxyfile) builds with zero warnings,
# so a public name without a doc comment fails the quick tests. Registered
# only where Doxygen is installed (scripts/install-deps installs it).
function(plait_add_reference_test)
  find_program(PLAIT_DOXYGEN doxygen)
  if(NOT PLAIT_DOXYGEN)
    message(STATUS "plait: skipping docs.reference (no doxygen)")
    return()
  endif()
  plait_label_selected(selected quick docs)
  if(NOT selected)
    return()
  endif()
  add_test(NAME docs.reference
           COMMAND ${CMAKE_COMMAND} -E env PLAIT_DOCS_OUT=${PROJECT_BINARY_DIR}/docs-reference-test
                   ${PLAIT_DOXYGEN} docs/Doxyfile
           WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
  set_tests_properties(docs.reference PROPERTIES LABELS "quick;docs" TIMEOUT 120)
endfunction()
