# locklab: the two commands of the README, and the steps they are made of.
#   make run    install what is missing, build, run the quick sweep and its report
#   make test   build with warnings as errors, run every C test (plain and
#               ThreadSanitizer), the API's edges and the parsers under
#               AddressSanitizer and UndefinedBehaviorSanitizer, and the
#               Python tests

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
JOBS   ?= $(shell nproc)

.PHONY: all setup run test ctest tsan asan pytest clean

all: setup

# apt first: a fresh Debian has no python3-venv (nor cmake) until setup-apt.sh runs.
$(BIN)/python:
	./scripts/setup-apt.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

setup: $(BIN)/python
	./scripts/setup-apt.sh
	$(BIN)/pip install -q '.[test]'

# The main job: the InnoDB mutex study's story and ll in a quick sweep (~2-3 min on 2
# cores), then its report.
run: setup
	$(BIN)/locklab sweep --preset quick
	$(BIN)/locklab report latest --out report

build/build.ninja:
	cmake -S . -B build -G Ninja -DLL_WERROR=ON

build-tsan/build.ninja:
	cmake -S . -B build-tsan -G Ninja -DLL_WERROR=ON -DLL_SANITIZE=thread

ctest: build/build.ninja
	cmake --build build
	cd build && ctest -j$(JOBS) --output-on-failure

tsan: build-tsan/build.ninja
	cmake --build build-tsan
	cd build-tsan && ctest -j$(JOBS) --output-on-failure

# AddressSanitizer and UndefinedBehaviorSanitizer (a report fails the test) on the
# C API's edges, every algorithm (test_api_contract: NULL arguments, unheld, destroyed
# locks), and on what parses and copies caller-given sizes: knob lists and configs
# (a caller's own ops table, test_locks config).  Configured every time: a folder
# configured with other sanitizers takes these.
asan:
	cmake -S . -B build-asan -G Ninja -DLL_WERROR=ON -DLL_SANITIZE=address,undefined
	cmake --build build-asan --target test_locks test_api_contract
	cd build-asan && ctest -j$(JOBS) --output-on-failure -R '^(config|nested|contract/.*)$$'

pytest: setup
	$(BIN)/python -m pytest -q

test: setup ctest tsan asan pytest

clean:
	rm -rf build build-tsan build-asan $(VENV)

# The profiler's figures and real-program runs (docs/profiler.md); not part of `make test`.
.PHONY: profile-overhead profile-memcached profile-attribution profile-mariadb

# The bench's uncontended pthread pairs with and without liblocklab-prof.so, alternating.
profile-overhead: build/build.ninja
	cmake --build build
	$(PYTHON) scripts/profile-figures.py overhead build

# memcached's throughput under memcaslap with and without the profiler: 41 alternating
# pairs (~7 min), the number the figure in docs/profiler.md was taken with.
profile-memcached: setup build/build.ninja
	cmake --build build
	$(PYTHON) scripts/profile-figures.py memcached build 41

# Where the profiler's cost in memcached goes: its code's share of the server's CPU
# (perf, from apt's linux-perf) and page faults per op, 7 pairs (~1 min).
profile-attribution: setup build/build.ninja
	cmake --build build
	$(PYTHON) scripts/profile-figures.py attribution build 7

# MariaDB under sysbench oltp_read_write, profiled from start to shutdown (~1-2 min).
profile-mariadb: setup
	./scripts/profile-mariadb.sh
