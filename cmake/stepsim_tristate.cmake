# stepsim_tristate_option(NAME DOC OUT) (style.md §3.9): a cache option NAME = AUTO | ON | OFF,
# AUTO by default; sets OUT to its upper-cased value; any other value fails the configure.
function(stepsim_tristate_option name doc out)
  set(${name} AUTO CACHE STRING "${doc}")
  set_property(CACHE ${name} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${${name}}" mode)
  if(NOT mode MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${name}: expected AUTO, ON or OFF, got '${${name}}'")
  endif()
  set(${out} ${mode} PARENT_SCOPE)
endfunction()
