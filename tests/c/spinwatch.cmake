# The swapper's warning for a pure spinlock (src/swap/spinwatch.c), checked on
# lockmix's output: cmake -DSWAP=liblocklab-swap.so -DPROG=lockmix -DLOCK=tas
# [-DOPTS=spin=auto] -DTHREADS=4 -DWARNINGS=1 -P spinwatch.cmake
# WARNINGS: how many warnings stderr must hold (0 or 1: the warning comes once).
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${SWAP} LOCKLAB_SWAP_LOCK=${LOCK}
          LOCKLAB_SWAP_LOCK_OPTS=${OPTS}
          ${PROG} --threads ${THREADS} --mutexes 32 --iterations 2000 --cpus 2 --watchdog 100
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lockmix exited with ${rc}")
endif()
string(REGEX MATCHALL "locklab: swap: warning:" warnings "${err}")
list(LENGTH warnings n)
if(NOT n EQUAL WARNINGS)
  message(FATAL_ERROR "${n} warnings, expected ${WARNINGS}")
endif()
if(n EQUAL 1 AND NOT err MATCHES "warning: ${LOCK}[^ ]* only spins[^\n]*${LOCK}:spin=auto[^\n]*fifo-tp[^\n]*ll")
  message(FATAL_ERROR "the warning does not name ${LOCK}:spin=auto, fifo-tp and ll")
endif()
