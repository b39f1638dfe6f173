# docs/fields.md is what this build's field table prints (stepsim list fields --format markdown):
# a field added, renamed or redocumented without regenerating the file fails here.
# Regenerate: build/bin/stepsim list fields --format markdown > docs/fields.md
execute_process(COMMAND ${STEPSIM} list fields --format markdown
                OUTPUT_VARIABLE generated RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "stepsim list fields --format markdown failed (${rc}): ${err}")
endif()
if(NOT EXISTS ${DOC})
  message(FATAL_ERROR "${DOC} is missing; generate it with: stepsim list fields --format markdown > docs/fields.md")
endif()
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  file(WRITE ${WORK_DIR}/fields.generated.md "${generated}")
  message(FATAL_ERROR "${DOC} is stale: it differs from what this build's field table prints (see "
                      "${WORK_DIR}/fields.generated.md); regenerate it with: "
                      "stepsim list fields --format markdown > docs/fields.md")
endif()
string(LENGTH "${committed}" n)
if(n LESS 10000)
  message(FATAL_ERROR "${DOC} is suspiciously short (${n} bytes)")
endif()
message(STATUS "docs/fields.md current (${n} bytes)")
