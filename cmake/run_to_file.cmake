# run_to_file.cmake — cmake -DOUTPUT=file -P run_to_file.cmake -- COMMAND ARGS...
# Runs the command and writes its standard output to OUTPUT (fails the build
# when the command fails). Used to generate the man page and completions.
set(args "")
set(seen_separator OFF)
foreach(k RANGE ${CMAKE_ARGC})
  if(seen_separator AND DEFINED CMAKE_ARGV${k})
    list(APPEND args "${CMAKE_ARGV${k}}")
  elseif("${CMAKE_ARGV${k}}" STREQUAL "--")
    set(seen_separator ON)
  endif()
endforeach()
execute_process(COMMAND ${args} OUTPUT_FILE "${OUTPUT}.tmp" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE "${OUTPUT}.tmp")
  message(FATAL_ERROR "`${args}` failed (${rc})")
endif()
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
