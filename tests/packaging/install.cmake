# `cmake --install` of the main build into a scratch prefix, then the consumers
# (consumer/consumer.c, and consumer/consumer.cpp over locklab/mutex.hpp) built
# against it both ways a user would, and run:
#   1. cc consumer.c $(pkg-config --cflags --libs locklab), PKG_CONFIG_PATH at the
#      prefix; c++ -std=c++17 consumer.cpp the same way
#   2. consumer/CMakeLists.txt: find_package(locklab CONFIG) + locklab::locklab,
#      CMAKE_PREFIX_PATH at the prefix
# All run with the prefix's library (an rpath to it), not the build tree's.
# Without a C++ compiler (CXX_COMPILER empty) the C++ halves are left out, saying so.
# (cmake -P, run by ctest; CMakeLists.txt in this directory passes the variables.)
#
#   BUILD_DIR WORK_DIR CONSUMER_DIR GENERATOR C_COMPILER CXX_COMPILER LIBDIR PKG_CONFIG
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/run.cmake)

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

foreach(file ${LIBDIR}/liblocklab.so ${LIBDIR}/liblocklab.so.0 ${LIBDIR}/liblocklab-prof.so
             ${LIBDIR}/liblocklab-swap.so
             include/locklab/locklab.h include/locklab/locks/ll.h include/locklab/rwlocks/ll.h
             include/locklab/bits/api.h bin/locklab-bench
             ${LIBDIR}/pkgconfig/locklab.pc ${LIBDIR}/cmake/locklab/locklabConfig.cmake
             ${LIBDIR}/cmake/locklab/locklabConfigVersion.cmake
             include/locklab/mutex.hpp)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "not installed: ${prefix}/${file}")
  endif()
endforeach()
# The benchmark finds its library beside it ($ORIGIN/../LIBDIR).
run(${prefix}/bin/locklab-bench list ll)
# The lock swapper finds liblocklab beside it ($ORIGIN): it loads and knows its locks.
run(${CMAKE_COMMAND} -E env LD_PRELOAD=${prefix}/${LIBDIR}/liblocklab-swap.so
    LOCKLAB_SWAP_LOCK=futex LOCKLAB_SWAP_CHECK=1 ${prefix}/bin/locklab-bench list ll)

# 1. pkg-config.
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/${LIBDIR}/pkgconfig)
  run(${PKG_CONFIG} --cflags --libs locklab)
  separate_arguments(flags UNIX_COMMAND "${out}")
  message(STATUS "pkg-config --cflags --libs locklab: ${out}")
  run(${C_COMPILER} -std=c11 -Wall -Wextra -Werror ${CONSUMER_DIR}/consumer.c ${flags}
      -Wl,-rpath,${prefix}/${LIBDIR} -o ${WORK_DIR}/consumer-pkgconfig)
  run(${WORK_DIR}/consumer-pkgconfig)
  message(STATUS "pkg-config build: ${out}")
  if(CXX_COMPILER)
    run(${CXX_COMPILER} -std=c++17 -Wall -Wextra -Wshadow -pedantic -Werror
        ${CONSUMER_DIR}/consumer.cpp ${flags} -Wl,-rpath,${prefix}/${LIBDIR}
        -o ${WORK_DIR}/consumer-cpp-pkgconfig)
    run(${WORK_DIR}/consumer-cpp-pkgconfig)
    message(STATUS "pkg-config build, C++: ${out}")
  endif()
else()
  message(STATUS "no pkg-config on this machine: its half of the test left out")
endif()

# 2. find_package(locklab CONFIG); the package registry kept out, so only the prefix can match.
set(cxx -DWITH_CXX=OFF)
if(CXX_COMPILER)
  set(cxx -DWITH_CXX=ON -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
      "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Wshadow -pedantic -Werror")
else()
  message(STATUS "no C++ compiler on this machine: the C++ consumer (consumer.cpp) left out")
endif()
run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/cmake -G ${GENERATOR}
    -DCMAKE_C_COMPILER=${C_COMPILER} ${cxx} -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_C_FLAGS=-Werror)
string(FIND "${out}" "locklab_DIR=${prefix}/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "find_package(locklab) did not take the installed package:\n${out}")
endif()
run(${CMAKE_COMMAND} --build ${WORK_DIR}/cmake)
run(${WORK_DIR}/cmake/consumer)
message(STATUS "find_package build: ${out}")
if(CXX_COMPILER)
  run(${WORK_DIR}/cmake/consumer_cpp)
  message(STATUS "find_package build, C++: ${out}")
endif()
