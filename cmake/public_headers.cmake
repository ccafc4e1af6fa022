# reheap_check_public_headers(): every public header compiles on its own.
#
# One generated source per header under <part>/include/reheap/ (and the generated
# reheap/build_config.h), which includes only that header (twice, to check its include guard), all
# built as one object library in the default build with the project's warnings: a header that
# leans on what another header happened to include, or that only compiles after another one, breaks
# the build and the message names it. Called after the parts, so that their targets exist.
function(reheap_check_public_headers)
  set(sources)
  set(parts heap runtime)
  if(TARGET reheap_testing)
    list(APPEND parts testing)
  endif()
  set(headers reheap/build_config.h)
  foreach(part IN LISTS parts)
    file(GLOB_RECURSE part_headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}/${part}/include
         ${PROJECT_SOURCE_DIR}/${part}/include/reheap/*.h)
    list(APPEND headers ${part_headers})
  endforeach()
  foreach(header IN LISTS headers)
    string(MAKE_C_IDENTIFIER ${header} name)
    set(source ${PROJECT_BINARY_DIR}/public_headers/${name}.cpp)
    file(CONFIGURE OUTPUT ${source} CONTENT "#include <${header}>\n#include <${header}>\n" @ONLY)
    list(APPEND sources ${source})
  endforeach()
  add_library(reheap_public_headers OBJECT ${sources})
  target_link_libraries(reheap_public_headers PRIVATE reheap_runtime reheap_warnings)
  if(TARGET reheap_testing)
    target_link_libraries(reheap_public_headers PRIVATE reheap_testing)
  endif()
endfunction()
