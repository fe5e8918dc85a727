# kvsim — build, test, bench, fuzz, install.
#
#   make run     bootstrap dependencies, build, run the default experiment
#   make test    bootstrap dependencies, build, run every test (cmocka): one line
#                per test program, the full log in build/test.log
#   make SAN=1 test   the same under AddressSanitizer + UBSan (build-san/)
#   make bench   benchmarks (ratios against baselines run in the same call)
#   make fuzz    libFuzzer targets, FUZZ_SECONDS each (default 60), and a table
#   make study   the study's experiment matrix (analysis/study/) and its report;
#                STUDY=quick a reduced matrix in minutes, STUDY=tiny seconds
#   make figures the quick study, its headline figures copied to analysis/figures/
#   make install PREFIX=/usr/local DESTDIR=
#
# Each layer folder builds one static archive (libkvsim_<folder>.a, '/' as
# '_'); the layers, lowest first, are listed in LAYERS and a folder uses only
# those below it (tests/house/check_house.py checks the includes and that no files
# call each other in a loop). Binaries and tests link the archives top layer
# first, so no archive group is needed.

CC      := gcc
SAN     ?=
PREFIX  ?= /usr/local
DESTDIR ?=
FUZZ_SECONDS ?= 60

ifeq ($(SAN),1)
BUILD   ?= build-san
OPT     := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
           -fno-sanitize-recover=all -DKVSIM_CHECK=1
LDSAN   := -fsanitize=address,undefined
else
BUILD   ?= build
OPT     := -O2 -g
LDSAN   :=
endif
ifeq ($(DEBUG),1)
OPT     += -DKVSIM_CHECK=1
endif

# How long the bootstrap waits for another apt-get or dpkg to release its
# lock, and how often it looks (seconds; own choice: an unattended upgrade
# on a fresh machine takes minutes).
APT_LOCK_TIMEOUT ?= 600
APT_LOCK_RETRY_S ?= 5

# Debian packages the build and tests need (the bootstrap installs them).
APT_PKGS := make gcc pkg-config libgsl-dev libhdf5-dev libsqlite3-dev \
            libcmocka-dev libinih-dev libjansson-dev libyaml-dev nettle-dev zlib1g-dev \
            libopenmpi-dev openmpi-bin python3 python3-h5py python3-matplotlib python3-pandas \
            python3-numpy python3-simpy3
PC_PKGS  := gsl hdf5 sqlite3 inih jansson yaml-0.1 nettle zlib

VERSION  := 0.1.0

# Recursive (=) so pkg-config runs after the bootstrap, not at parse time.
PC_CFLAGS = $(shell pkg-config --cflags $(PC_PKGS) cmocka 2>/dev/null)
PC_LIBS   = $(shell pkg-config --libs $(PC_PKGS) 2>/dev/null) -lhdf5_hl
MPI_CFLAGS = $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS   = $(shell pkg-config --libs ompi-c 2>/dev/null)
HAVE_MPI   = $(if $(MPI_LIBS),-DKVSIM_HAVE_MPI=1,)

CFLAGS  = -std=c17 -Wall -Wextra -Werror -D_GNU_SOURCE -I. -I$(BUILD)/gen $(OPT) \
          $(PC_CFLAGS) $(MPI_CFLAGS) $(HAVE_MPI) \
          -DKVSIM_VERSION=\"$(VERSION)\" -DKVSIM_GITREV=\"$(GITREV)\"
LDLIBS  = $(PC_LIBS) $(MPI_LIBS) -lm -ldl -lpthread

# Layers, lowest first (see tests/house/check_house.py).
LAYERS  := sim/base models traces policies sim/engine sim/cluster sim/net sim/run \
           sim/out gpu_validation sim/cli
FOLDERS := $(LAYERS)
# The commit, with "-dirty.<digest>" when the sources differ from it
# (sim/gitrev.sh); files and catalog rows record it, and a sweep re-runs the
# points another revision made.
GITREV  := $(shell [ -f sim/gitrev.sh ] && sh sim/gitrev.sh sim models traces policies gpu_validation Makefile || echo unknown)
# sim/cli/main.c is the binary's entry point, not part of the archive.
lib_srcs = $(filter-out sim/cli/main.c,$(wildcard $(1)/*.c))
LIB_SRCS := $(foreach f,$(FOLDERS),$(call lib_srcs,$(f)))
lib_of   = $(BUILD)/libkvsim_$(subst /,_,$(1)).a
LIBS     := $(foreach f,$(FOLDERS),$(call lib_of,$(f)))
# link order: the top layer first
reverse  = $(if $(1),$(call reverse,$(wordlist 2,$(words $(1)),$(1))) $(firstword $(1)))
LINK_LIBS = $(foreach f,$(call reverse,$(FOLDERS)),$(call lib_of,$(f)))
# Data files compiled in (models/embed.sh), each into its folder's archive:
# the hardware, model and calibration specs, and the presets.
MDL_EMBED := $(sort $(wildcard models/hw/*.ini models/llm/*.ini models/calibration/compute-*.ini))
POL_EMBED := $(sort $(wildcard policies/presets/*.ini policies/presets/shared/*.ini)) \
             policies/presets/list
GEN_OBJS_models   := $(BUILD)/gen/mdl_embedded.o
GEN_OBJS_policies := $(BUILD)/gen/pol_presets_embedded.o

# Tests by concern (tests/README.md): unit/<layer>/, system/, house/; each
# program builds to $(BUILD)/tests/<its name>, whatever its folder.
TEST_SRCS := $(sort $(wildcard tests/unit/*/test_*.c tests/system/test_*.c tests/house/test_*.c))
TEST_BINS := $(addprefix $(BUILD)/tests/,$(basename $(notdir $(TEST_SRCS))))
KVSIM     := $(BUILD)/kvsim

.PHONY: FORCE all run test bench fuzz install clean format deps build build-tests \
        run-only test-only bench-only fuzz-only install-only study study-only \
        figures figures-only
.DEFAULT_GOAL := all

# ---- bootstrap: install missing Debian packages (root) or say how ----------
deps:
	@missing=""; for p in $(APT_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' \
	    || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "kvsim: installing missing Debian packages:$$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt_get() { end=$$(( $$(date +%s) + $(APT_LOCK_TIMEOUT) )); said=; \
	      while :; do \
	        out=$$(apt-get -o DPkg::Lock::Timeout=$(APT_LOCK_TIMEOUT) "$$@" 2>&1) \
	          && { [ -z "$$out" ] || printf '%s\n' "$$out"; return 0; }; \
	        case "$$out" in *"Could not get lock"*|*"Unable to lock"*|*"Unable to acquire"*) ;; \
	          *) printf '%s\n' "$$out" >&2; return 1;; esac; \
	        if [ "$$(date +%s)" -ge "$$end" ]; then printf '%s\n' "$$out" >&2; \
	          echo "kvsim: gave up after $(APT_LOCK_TIMEOUT) s waiting for the apt/dpkg lock" >&2; \
	          return 1; fi; \
	        [ -n "$$said" ] || echo "kvsim: another apt-get or dpkg holds its lock; waiting up to $(APT_LOCK_TIMEOUT) s" >&2; \
	        said=1; sleep $(APT_LOCK_RETRY_S); \
	      done; }; \
	    apt_get update -qq && apt_get install -y -qq --no-install-recommends $$missing \
	      || { echo "kvsim: apt-get failed" >&2; exit 1; }; \
	  else \
	    echo "kvsim: missing Debian packages. Run as root:" >&2; \
	    echo "  apt-get install -y --no-install-recommends$$missing" >&2; exit 1; \
	  fi; \
	fi

all:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory build

run:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory run-only

test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory test-only

study figures:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $@-only

bench:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory bench-only

fuzz:
	@$(MAKE) --no-print-directory deps APT_PKGS="$(APT_PKGS) clang libclang-rt-dev"
	@$(MAKE) --no-print-directory fuzz-only

# ---- build ------------------------------------------------------------------
build: $(KVSIM) $(BUILD)/kvreplay

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/gen/mdl_embedded.c: $(MDL_EMBED) models/embed.sh
	@mkdir -p $(dir $@)
	sh models/embed.sh mdl_embedded models/ $(MDL_EMBED) > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/pol_presets_embedded.c: $(POL_EMBED) models/embed.sh
	@mkdir -p $(dir $@)
	sh models/embed.sh pol_preset_files '' $(POL_EMBED) > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(CFLAGS) -c $< -o $@

define archive_rule
$(call lib_of,$(1)): $(patsubst %.c,$(BUILD)/%.o,$(call lib_srcs,$(1))) $(GEN_OBJS_$(1))
	@mkdir -p $$(dir $$@)
	@rm -f $$@
	ar rcs $$@ $$^
endef
$(foreach f,$(FOLDERS),$(eval $(call archive_rule,$(f))))

# Objects that print or record KVSIM_GITREV rebuild when the revision changes
# (the flag alone is invisible to make, so provenance would go stale).
$(BUILD)/gen/gitrev.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(GITREV)' | cmp -s - $@ || echo '$(GITREV)' > $@
$(BUILD)/sim/cli/main.o $(BUILD)/sim/out/out_hdf5.o: $(BUILD)/gen/gitrev.stamp
FORCE:

$(KVSIM): $(BUILD)/sim/cli/main.o $(LIBS)
	$(CC) $(OPT) $(LDSAN) -rdynamic $< $(LINK_LIBS) $(LDLIBS) -o $@

# kvreplay: host backend always; CUDA backend when nvcc exists (see
# gpu_validation/kvreplay.mk).
-include gpu_validation/kvreplay.mk
ifndef KVREPLAY_RULES
$(BUILD)/kvreplay:
	@true
endif

# ---- tests ------------------------------------------------------------------
define test_rule
$(BUILD)/tests/$(basename $(notdir $(1))): $(1) $(LIBS)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) -MMD -MP -MF $$@.dep $$< $$(LINK_LIBS) $$(LDSAN) -rdynamic $$(LDLIBS) -lcmocka -o $$@
endef
$(foreach s,$(TEST_SRCS),$(eval $(call test_rule,$(s))))

# Example policy plugin that tests/unit/policies/test_pol_plugin.c loads (not in any archive).
# -MMD: a header it includes (pol.h, cfg.h) changing rebuilds it.
$(BUILD)/plugins/%.so: policies/plugins/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -fPIC -shared $< $(LDSAN) -o $@
TEST_EXTRA += $(BUILD)/plugins/example_plugin.so

build-tests: $(TEST_BINS) $(KVSIM) $(BUILD)/kvreplay $(TEST_EXTRA)

# The tests' parsed traces and digests go to a cache of their own under
# BUILD (make clean removes it), not the user's. One line per test program;
# every program's output goes to BUILD/test.log (tests/run_tests.sh).
test-only: build-tests
	@rm -rf $(BUILD)/test-cache
	@KVSIM=$(abspath $(KVSIM)) BUILD=$(abspath $(BUILD)) SAN=$(SAN) \
	  KVSIM_CACHE_DIR=$(abspath $(BUILD))/test-cache TEST_LOG=$(BUILD)/test.log \
	  sh tests/run_tests.sh $(TEST_BINS)

# The default experiment under the main replication policies, side by side:
# HDF5 per run, the catalog and a TTFT CDF plot under results/. The table's
# TTFT quantiles and SLO attainment are over offered requests (a shed one is
# a miss, +inf); ttft_completed_mean_ms over completed ones. Points that
# another revision made run again (a new commit rebuilds kvsim first).
RUN_POLICIES ?= none,reactive_hotspot,early_rdma,speculative,full
RUN_SEEDS ?= 5
run-only: $(KVSIM)
	$(KVSIM) sweep --grid policy.replication.name=$(RUN_POLICIES) --seeds $(RUN_SEEDS) -j 2 -o results
	@$(KVSIM) plot table results --by policy.replication.name --metrics \
	  admitted_share,ttft_p95_ms,ttft_p99_ms,slo_attainment,ttft_completed_mean_ms,bytes_fg,bytes_bg,spec.replicas_created,spec.replicas_wasted,spec.unused_vram_gb_s
	@$(KVSIM) plot cdf --catalog results \
	  --label policy.replication.name --log -o results/ttft_cdf.png \
	  && echo "wrote results/ttft_cdf.png"

# The study (issue 15): every analysis/study/<exp>.sweep line of size STUDY
# (full, quick or tiny) as a resumable sweep into STUDY_OUT, then
# analysis/study_report.py (see analysis/study/README.md). Sizes go to their
# own folders so a report never pools two sizes.
STUDY ?= full
STUDY_JOBS ?= 2
STUDY_OUT ?= results/study$(if $(filter full,$(STUDY)),,-$(STUDY))
study-only: $(KVSIM)
	sh analysis/study/run_study.sh $(STUDY) $(STUDY_OUT) -j $(STUDY_JOBS)

# The headline figures of the quick study, as analysis/study_report.py
# --figures names them, into analysis/figures/ (committed; the README shows them),
# with the quick answer.csv, from which the READMEs' answer blocks are rewritten.
figures-only: $(KVSIM)
	sh analysis/study/run_study.sh quick results/study-quick -j $(STUDY_JOBS)
	@if [ -f analysis/study_report.py ]; then \
	  /usr/bin/python3 analysis/study_report.py results/study-quick --figures analysis/figures && \
	  /usr/bin/python3 analysis/answer_text.py analysis/figures/answer.csv --write README.md analysis/README.md; \
	else echo "figures: analysis/study_report.py is not in this tree yet; no figures"; fi

bench-only: build
	@for s in $(sort $(wildcard tests/bench/bench_*.sh)); do \
	  KVSIM=$(abspath $(KVSIM)) BUILD=$(abspath $(BUILD)) sh $$s || exit 1; done

# ---- fuzzing (clang + libFuzzer; targets are tests/fuzz/fuzz_*.c) ----------
# Every target runs FUZZ_SECONDS on its seeds (tests/fuzz/NAME/) with its
# dictionary (tests/fuzz/NAME.dict), even after one fails; the table at the
# end says how each did (tests/fuzz/fuzz_run.sh). FUZZ_TARGETS picks some.
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_TARGETS ?= $(patsubst tests/fuzz/%.c,%,$(FUZZ_SRCS))
FUZZ_OPT := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
            -fno-omit-frame-pointer
fuzz-only:
	@$(MAKE) --no-print-directory -k CC=clang BUILD=build-fuzz OPT="$(FUZZ_OPT)" \
	  $(patsubst %,build-fuzz/fuzz/%,$(FUZZ_TARGETS)) || true
	@sh tests/fuzz/fuzz_run.sh $(FUZZ_SECONDS) build-fuzz $(FUZZ_TARGETS)

# (a target that no longer builds leaves no old binary behind to be run)
build-fuzz/fuzz/%: tests/fuzz/%.c $(LIBS)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(CC) $(CFLAGS) -MMD -MP -fsanitize=fuzzer,address,undefined $< $(LINK_LIBS) $(LDLIBS) -o $@

# ---- install / clean / format ----------------------------------------------
install: all
	@$(MAKE) --no-print-directory install-only

# The analysis scripts go to share/kvsim/analysis, the experiment configs and
# the script that runs them to share/kvsim/analysis/experiments (as in the
# repository, so the README's commands work from share/kvsim).
install-only:
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/kvsim
	install -m 755 $(KVSIM) $(DESTDIR)$(PREFIX)/bin/kvsim
	[ ! -x $(BUILD)/kvreplay ] || install -m 755 $(BUILD)/kvreplay $(DESTDIR)$(PREFIX)/bin/kvreplay
	install -d $(DESTDIR)$(PREFIX)/share/kvsim/models/hw $(DESTDIR)$(PREFIX)/share/kvsim/models/llm \
	  $(DESTDIR)$(PREFIX)/share/kvsim/analysis/experiments
	install -m 644 models/hw/*.ini $(DESTDIR)$(PREFIX)/share/kvsim/models/hw/
	install -m 644 models/llm/*.ini $(DESTDIR)$(PREFIX)/share/kvsim/models/llm/
	install -m 755 analysis/*.py $(DESTDIR)$(PREFIX)/share/kvsim/analysis/
	install -m 755 analysis/experiments/*.sh $(DESTDIR)$(PREFIX)/share/kvsim/analysis/experiments/
	install -m 644 analysis/experiments/*.ini $(DESTDIR)$(PREFIX)/share/kvsim/analysis/experiments/

clean:
	rm -rf build build-san build-fuzz

format:
	@$(MAKE) --no-print-directory deps APT_PKGS="clang-format"
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu')

# A test program's dependencies are NAME.dep (its source's folder is in
# them); a NAME.d from before the tests moved into folders is not read.
-include $(shell find $(BUILD) -name '*.d' -not -path '$(BUILD)/tests/*' 2>/dev/null)
-include $(wildcard $(BUILD)/tests/*.dep)
