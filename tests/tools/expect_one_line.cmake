# SPDX-License-Identifier: Apache-2.0
# expect_one_line(NAME RC ERR PATTERN): a refused CLI run exited with status 2 and wrote exactly
# one line to stderr, "error: ..." containing PATTERN (a CMake regex). Included by *_check.cmake.
function(expect_one_line name rc err pattern)
  if(NOT rc STREQUAL "2")
    message(FATAL_ERROR "${name}: expected exit 2, got '${rc}': ${err}")
  endif()
  if(NOT err MATCHES "^error: [^\n]*${pattern}[^\n]*\n$")
    message(FATAL_ERROR "${name}: expected one error line matching '${pattern}', got: '${err}'")
  endif()
endfunction()
