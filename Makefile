# Entry points. `make demo` and `make test` install missing Debian packages,
# configure, build and run. BUILD selects the build folder.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
# The tests wait on events far more than they compute (a 2-core machine:
# 131 s of CPU in 483 s at -j2), so three run per core: at four per core
# (141 s on 2 cores loaded by stress-ng, bench/results/2026-11-28-make-test-time.md)
# the real etcd of the multi-node tests answered after the supervisors' 2 s
# in every full run, at three (131 s) it did not.
TEST_JOBS ?= $(shell echo $$(( $(JOBS) * 3 )))
CMAKE_FLAGS ?=
# A unity build (CMake compiles eight sources as one translation unit): a
# fresh clone's build spends most of its time instantiating the same gtest,
# nlohmann::json and Boost templates in every source file; on 2 cores it took
# about 7 minutes instead of 14 (bench/results/2026-11-28-make-test-time.md).
# UNITY=OFF for a development tree rebuilt file by file.
UNITY ?= ON
# Line tables only (-g1), as the sanitizer builds: a crash report's file and
# line of our own frames stay, the types and variables that a debugger would
# read go. A fresh unity build on 2 cores took 6 min 31 s instead of about
# 7 min 40 s with full debug info, and all tests passed on it
# (bench/results/2026-11-28-make-test-time.md). DEBUG_INFO=-g for a debugger.
DEBUG_INFO ?= -g1

# Ninja, not Make: given a list of targets (`make sanitize`, `make fuzz`,
# `make demo`), CMake's Makefiles build them one after the other, so two cores
# sat half idle; the ASan+UBSan build of `make sanitize` took 589 s with them
# and 385 s with Ninja on the same 2-core machine (the whole build of `make
# test` keeps both cores busy either way: about 7 min).
# bench/results/2026-11-28-make-test-time.md. A folder configured earlier
# keeps its generator (CMake refuses to change it).
GENERATOR = $(if $(wildcard $(1)/CMakeCache.txt),,-G Ninja)

.PHONY: all deps configure build test demo clean dist sanitize fuzz sanitize-fuzz

all: build

deps:
	@scripts/install_deps.sh

configure: deps
	cmake -S . -B $(BUILD) $(call GENERATOR,$(BUILD)) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCMAKE_UNITY_BUILD=$(UNITY) \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 $(DEBUG_INFO) -DNDEBUG" \
	  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 $(DEBUG_INFO) -DNDEBUG" $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# Python's own folder first on the tests' PATH: what they start as `python3`
# (scripts, the crash plugins' host) is then the interpreter, not pyenv's
# shim, a shell script that runs about ten more for 0.4 s of CPU on every
# start (the build bakes the interpreter's path into the tests the same way:
# CMakeLists.txt). Nothing changes where `python3` is the interpreter.
PYTHON_FIRST = pybin=$$(python3 -c 'import os, sys; print(os.path.dirname(sys.executable))' 2>/dev/null) || pybin=; \
  export PATH="$${pybin:+$$pybin:}$$PATH";

test: build
	$(PYTHON_FIRST) cd $(BUILD) && ctest --output-on-failure -j$(TEST_JOBS) --timeout 300

# The demo builds only what it runs: the supervisor, the injected library, the
# simulated GPU and launcher, and the timeline converter.
DEMO_TARGETS = xpu_timer_supervisor xpu_timer_inject xpu_timer_gen_trace_timeline \
	xpu_timer_stacktrace_viewer xpu_timer_sim_launch sim_workload \
	xpu_sim_cudart xpu_sim_cublas xpu_sim_cublaslt xpu_sim_nccl
demo: configure
	cmake --build $(BUILD) -j$(JOBS) --target $(DEMO_TARGETS)
	scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)

dist: deps
	scripts/make_dist.sh

# Unit tests under ASan+UBSan and under TSan (the supervisor's threads and the
# injected library's background thread), and the tests of the parsers of
# hostile input: stack files, merged dumps and hang.json (flamegraph), ring
# dumps (timeline). End-to-end tests are left out: a sanitized
# libxpu_timer_inject.so cannot be preloaded into unsanitized ranks. The
# coordination store's tests run a real etcd (the job view's thread).
SAN_TARGETS ?= common_test inject_unit_test stack_unit_test flamegraph_test timeline_test \
               supervisor_test supervisor_job_test supervisor_ranks_test \
               supervisor_analysis_test supervisor_metrics_test supervisor_http_test \
               supervisor_coordination_test supervisor_incidents_test \
               etcd_store_process_test job_view_process_test
# TSan only where threads meet: the pure components (common, timeline, the
# analysis, the job launcher, the metrics' rendering, the rank pages' reader)
# start none and their tests start none, and leaving them out keeps CI short.
TSAN_TARGETS ?= $(filter-out common_test timeline_test supervisor_analysis_test supervisor_job_test \
                  supervisor_metrics_test supervisor_ranks_test,$(SAN_TARGETS))
# Line tables only (-g1): what a sanitizer's report reads. A unity build (CMake
# compiles its sources eight to a translation unit): on a fresh clone these two
# builds are compiled once each, and most of their time went to instantiating
# the same gtest, nlohmann::json and Boost templates in every source file.
# The test binaries wait on their child processes and etcd far more than they
# compute, so they run SAN_TEST_JOBS at a time (scripts/run_test_binaries.sh):
# the ASan+UBSan ones while the TSan build compiles, the TSan ones as soon as
# it is built, beside what is left of the first; every binary's output is in
# $(BUILD)-{asan,tsan}/sanitize-logs/, a failed one's printed
# (bench/results/2026-11-28-make-test-time.md).
# The sanitized binaries are run whole (scripts/run_test_binaries.sh), never
# by ctest: their tests are listed when ctest asks (PRE_TEST), not after each
# link, where listing them under ASan and TSan took about 50 s of CPU.
# Built with clang (scripts/install_deps.sh installs it for the fuzzers): on a
# 2-core machine the ASan+UBSan build took 201 s against GCC's 354 s, the TSan
# build 108 s against GCC's 163 s (bench/results/2026-11-28-make-test-time.md),
# and the tests see a second compiler's warnings and sanitizers beside the
# GCC build of `make test` and the release.
SAN_FLAGS = -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
            -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1 \
            -DCMAKE_UNITY_BUILD=ON -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST
SAN_TEST_JOBS ?= $(JOBS)
# SAN_ALONGSIDE: a command run while the TSan binaries run (`make
# sanitize-fuzz`: the fuzzers), whose failure fails the target too.
SAN_ALONGSIDE ?=
sanitize: deps
	cmake -S . -B $(BUILD)-asan $(call GENERATOR,$(BUILD)-asan) $(SAN_FLAGS) -DXPU_TIMER_SANITIZE=address $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j$(JOBS) --target $(SAN_TARGETS)
	cmake -S . -B $(BUILD)-tsan $(call GENERATOR,$(BUILD)-tsan) $(SAN_FLAGS) -DXPU_TIMER_SANITIZE=thread $(CMAKE_FLAGS)
	$(PYTHON_FIRST) UBSAN_OPTIONS=halt_on_error=1 scripts/run_test_binaries.sh $(BUILD)-asan/bin \
	  $(BUILD)-asan/sanitize-logs $(SAN_TEST_JOBS) $(SAN_TARGETS) \
	  >$(BUILD)-asan/sanitize-tests.log 2>&1 & asan=$$!; \
	cmake --build $(BUILD)-tsan -j$(JOBS) --target $(TSAN_TARGETS); built=$$?; \
	if [ $$built -eq 0 ]; then TSAN_OPTIONS=halt_on_error=1 \
	  scripts/run_test_binaries.sh $(BUILD)-tsan/bin $(BUILD)-tsan/sanitize-logs \
	  $(SAN_TEST_JOBS) $(TSAN_TARGETS) >$(BUILD)-tsan/sanitize-tests.log 2>&1 & tsan_pid=$$!; fi; \
	also=0; $(if $(SAN_ALONGSIDE),$(SAN_ALONGSIDE) || also=$$?;) \
	tsan=1; if [ $$built -eq 0 ]; then wait $$tsan_pid; tsan=$$?; fi; \
	wait $$asan; ran=$$?; echo "ASan+UBSan tests ($(BUILD)-asan/sanitize-tests.log):"; \
	cat $(BUILD)-asan/sanitize-tests.log; echo "TSan tests ($(BUILD)-tsan/sanitize-tests.log):"; \
	cat $(BUILD)-tsan/sanitize-tests.log 2>/dev/null; \
	[ $$ran -eq 0 ] && [ $$built -eq 0 ] && [ $$tsan -eq 0 ] && [ $$also -eq 0 ]

# The libFuzzer targets (every *_fuzz: stack files, status pages, ring dumps,
# socket messages, ...) built with clang in $(BUILD)-fuzz and run FUZZ_SECONDS
# each on a copy of their seed corpus (<component>/fuzz/corpus/); fails on a
# crash, leak or hang, naming the input.
FUZZ_SECONDS ?= 60
FUZZ_CMD = CMAKE_FLAGS="$(CMAKE_FLAGS)" JOBS=$(JOBS) scripts/run_fuzzers.sh $(BUILD)-fuzz $(FUZZ_SECONDS)
fuzz: deps
	$(FUZZ_CMD)

# Both, as CI runs them: the fuzz build and the fuzzers run while the TSan
# binaries run (those wait on child processes and etcd, a third of a core
# each; the fuzzers are bounded by time, not work), so the TSan run is off
# the critical path.
sanitize-fuzz: deps
	$(MAKE) sanitize SAN_ALONGSIDE='$(FUZZ_CMD)'
