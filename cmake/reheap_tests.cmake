# How the test suites are registered with ctest, and the labels that let a preset pick them.
#
#   concurrent  a suite of code that runs on several threads (the zone, the message allocator,
#               the runtime's workers and mailboxes): the tsan preset builds the target
#               `concurrent_tests` (every suite so labelled) and runs these alone
#   long        a case that takes more than ~20 s of CPU in a release build: ctest starts it
#               first (its COST), so that it runs beside the short ones instead of after them,
#               and gives it a longer timeout; `ctest -LE long` leaves it out of a quick run
#
# reheap_discover_tests(<target> [CONCURRENT] [LONG <regex>] [TIMEOUT <seconds>])
#   Registers every GoogleTest case of <target>, one ctest test each. CONCURRENT labels them all
#   `concurrent`; the cases whose full name (Suite.Case) matches LONG are labelled `long` too.
#   TIMEOUT sets the timeout of every case (the test preset's default otherwise).
#
# A case whose suite name ends in `ChildProcess` is not a test of its own: a test of the same file
# runs it in a child process (this binary with --gtest_filter=<its name> and an environment
# variable that tells it what to do), and without that variable it skips. Discovery leaves such
# cases out (REHEAP_CHILD_PROCESS_FILTER), so that they are neither run alone nor counted as
# skipped; a suite that has them and keeps gtest_discover_tests passes TEST_FILTER with it.
#
# A suite that needs no label keeps gtest_discover_tests. A suite of another kind (a script, a
# program run by add_test) labels a long test with reheap_long_test(<name>).
#
# gtest_discover_tests cannot give a case two labels (CMake 3.25 splits the list it passes on),
# so the labels are set by a second file that ctest includes after the discovered list.
include_guard(GLOBAL)
include(GoogleTest)

# A long case may take up to this long, under a sanitizer on a loaded machine.
set(REHEAP_LONG_TEST_TIMEOUT 1800)
# Long cases start before every other (ctest runs the costliest first when it has no measured
# times, as on a clean clone).
set(REHEAP_LONG_TEST_COST 100000)
# Every case but the ones a test runs in a child process (see above).
set(REHEAP_CHILD_PROCESS_FILTER "-*ChildProcess.*")

function(reheap_discover_tests target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "CONCURRENT" "LONG;TIMEOUT" "")
  set(properties "")
  if(arg_TIMEOUT)
    set(properties PROPERTIES TIMEOUT ${arg_TIMEOUT})
  endif()
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT 60 TEST_FILTER ${REHEAP_CHILD_PROCESS_FILTER}
    ${properties})

  set(labels "")
  if(arg_CONCURRENT)
    set(labels concurrent)
    set_property(GLOBAL APPEND PROPERTY REHEAP_CONCURRENT_TEST_TARGETS ${target})
  endif()
  set(script "# Written by reheap_discover_tests (cmake/reheap_tests.cmake).\n")
  string(APPEND script "foreach(test IN LISTS ${target}_TESTS)\n  set(labels \"${labels}\")\n")
  string(APPEND script "  set(more \"\")\n")
  if(arg_LONG)
    string(APPEND script "  if(test MATCHES [==[${arg_LONG}]==])\n"
                         "    list(APPEND labels long)\n"
                         "    set(more COST ${REHEAP_LONG_TEST_COST} TIMEOUT ${REHEAP_LONG_TEST_TIMEOUT})\n"
                         "  endif()\n")
  endif()
  string(APPEND script "  if(labels OR more)\n"
                       "    set_tests_properties(\"\${test}\" PROPERTIES LABELS \"\${labels}\" \${more})\n"
                       "  endif()\nendforeach()\n")
  set(file ${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake)
  file(WRITE ${file} "${script}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${file})
endfunction()

# Labels a test added with add_test `long` (see above).
function(reheap_long_test name)
  set_tests_properties(${name} PROPERTIES COST ${REHEAP_LONG_TEST_COST} TIMEOUT ${REHEAP_LONG_TEST_TIMEOUT})
  set_property(TEST ${name} APPEND PROPERTY LABELS long)
endfunction()

# The target `concurrent_tests`: every suite labelled concurrent, and what it runs. Called once,
# after the last suite is registered.
function(reheap_add_concurrent_tests_target)
  get_property(targets GLOBAL PROPERTY REHEAP_CONCURRENT_TEST_TARGETS)
  add_custom_target(concurrent_tests)
  if(targets)
    add_dependencies(concurrent_tests ${targets})
  endif()
endfunction()
