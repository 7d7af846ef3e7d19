# A build with the peer families left out (cmake -P, run by ctest; CMakeLists.txt
# in this directory passes the variables): Concurrency Kit switched off
# (LL_WITH_CK=OFF) and abseil's package hidden from find_package, so that both
# notes -- "left out by option" and "not found" -- are what `list` prints.
#
#   SOURCE_DIR BUILD_DIR GENERATOR C_COMPILER CXX_COMPILER BUILD_TYPE WERROR
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/run.cmake)

function(expect haystack needle what)
  string(FIND "${haystack}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: no '${needle}' in:\n${haystack}")
  endif()
endfunction()

# Only the benchmark: the library's own tests are the main build's.
set(compilers -DCMAKE_C_COMPILER=${C_COMPILER})
if(CXX_COMPILER)  # none when the main build had no C++ compiler
  list(APPEND compilers -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BUILD_DIR} -G ${GENERATOR} ${compilers}
    -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DLL_WERROR=${WERROR} -DLL_TESTS=OFF
    -DLL_WITH_CK=OFF -DLL_WITH_ABSL=AUTO -DCMAKE_DISABLE_FIND_PACKAGE_absl=ON)
expect("${out}" "Peers: without ck-mcs, ck-ticket, ck-fas" "configure")
expect("${out}" "Peers: without absl" "configure")
run(${CMAKE_COMMAND} --build ${BUILD_DIR} --target locklab-bench)

set(ck_note "Concurrency Kit left out at build time by LL_WITH_CK=OFF")
set(absl_note "abseil not found at build time; Debian: libabsl-dev, installed by `make setup`")

run(${BUILD_DIR}/locklab-bench list)
expect("${out}" "\nnot built: ck-mcs, ck-ticket, ck-fas (${ck_note})\n" "list")
expect("${out}" "\nnot built: absl (${absl_note})\n" "list")
expect("${out}" "\nll " "list")
if(out MATCHES "\n(ck-mcs|ck-ticket|ck-fas|absl) ")
  message(FATAL_ERROR "list shows a lock this build left out as runnable:\n${out}")
endif()

# JSON: the runnable locks carry "built":true, the left-out ones follow with the note.
run(${BUILD_DIR}/locklab-bench list --json)
string(JSON n LENGTH "${out}")
math(EXPR last "${n} - 1")
set(unbuilt "")
foreach(i RANGE ${last})
  string(JSON name GET "${out}" ${i} name)
  string(JSON built GET "${out}" ${i} built)
  if(NOT built)
    string(JSON note GET "${out}" ${i} note)
    list(APPEND unbuilt "${name}: ${note}")
  endif()
endforeach()
set(want "ck-mcs: ${ck_note}" "ck-ticket: ${ck_note}" "ck-fas: ${ck_note}" "absl: ${absl_note}")
if(NOT unbuilt STREQUAL want)
  message(FATAL_ERROR "list --json: left-out locks\n  ${unbuilt}\nwanted\n  ${want}")
endif()

# Asked for by name, a left-out lock is refused with the reason (exit 2).
foreach(args "list;ck-mcs" "bench;--lock;absl;--threads;1;--mutexes;1;--hold-ns;0;--duration;0.1")
  execute_process(COMMAND ${BUILD_DIR}/locklab-bench ${args} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "locklab-bench ${args}: exit ${rc}, wanted 2\n${out}${err}")
  endif()
  expect("${err}" "not built: " "locklab-bench ${args}")
endforeach()
message(STATUS "no-peers build: list names the left-out peers and why")
