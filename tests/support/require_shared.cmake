# SPDX-License-Identifier: Apache-2.0
# include()d by CMake -P test scripts that read ../shared/data (issue 13 item 24).
# stepsim_require_shared(PATH): when PATH is missing, fail under CI=true, else print "SKIPPED:"
# (the test's SKIP_REGULAR_EXPRESSION makes CTest report a skip) and leave the script.
macro(stepsim_require_shared path)
  if(NOT EXISTS "${path}")
    if("$ENV{CI}" STREQUAL "true")
      message(FATAL_ERROR "shared dataset missing under CI=true: ${path}")
    endif()
    message("SKIPPED: shared dataset not present: ${path}")
    return()
  endif()
endmacro()
