# The lab's entry points; each target calls python3 -m lab.molab <command>.
# Variables: KSRC=/path (existing 6.12 tree), FLAVOUR=debug|perf,
# VARIANT=patched|vanilla, SUITES=a,b, SCOPE=ci|full (make test), ACCEL=single|multi|kvm|auto, SMP=n,
# RESET=1 (make tree), BASE_COMMIT=sha (make export), ARGS=... (make boot),
# BUILD=1 TIMEOUT=s (make shell), V=1 (echo the guest console),
# BREAK=patch (make test: the series plus a breaking patch; must fail).

PYTHON ?= python3
MOLAB := $(PYTHON) -m lab.molab

opt = $(if $(strip $($(1))),$(2) '$(strip $($(1)))')
KOPTS = $(call opt,KSRC,--ksrc) $(call opt,FLAVOUR,--flavour)
VOPTS = $(call opt,VARIANT,--variant)
BOPTS = $(call opt,ACCEL,--accel) $(call opt,SMP,--smp) $(if $(V),--verbose)

.PHONY: help tree export kernel initramfs boot shell test test-full check check-each bench unit \
	host-bench host-report deb test-kit
.DEFAULT_GOAL := help

help:
	@echo "make tree [RESET=1]     kernel git tree build/linux (+ build/vanilla worktree)"
	@echo "make export [BASE_COMMIT=sha]  write the tree's base..series into series/ as mail"
	@echo "make kernel             build VARIANT (patched) FLAVOUR (debug) into build/out/"
	@echo "make initramfs          pack the guest for that kernel"
	@echo "make boot SUITES=a,b    boot it in QEMU and run suites"
	@echo "make shell [BUILD=1] [TIMEOUT=s]  boot it into a shell here (piped: run those commands)"
	@echo "make test               setup, unit tests, build, boot, the CI scope of the suites"
	@echo "make test BREAK=p.patch the same on the series + a breaking patch (must fail)"
	@echo "make test-full          every suite whole (full scope) on debug, then the ci scope on kasan"
	@echo "make check              checkpatch + W=1 build of the touched code"
	@echo "make check-each         build the kernel at every patch (perf config; slow)"
	@echo "make unit               host unit tests of the lab only"
	@echo "make bench [PRESET=full|quick] [ROUNDS=n] [BENCH_ARGS='MO_SIZE_MB=256 MO_REPS=5']  vanilla vs patched"
	@echo "                        (presets: guest/bench/presets/; QUICK=1 is PRESET=quick)"
	@echo "make deb [VARIANT=patched|vanilla] [LSMOD=file]  Debian packages from Debian's own config"
	@echo "make test-kit            make deb, boot it, run the host runner in it, host-report"
	@echo "make host-bench [PRESET=hardware] [BENCH_ARGS=...]  on a real NUMA/CXL machine, as root: the bench here"
	@echo "make host-report [RUNS='dir ...']  merge host-bench results (vanilla + patched)"

tree:
	$(MOLAB) tree $(call opt,KSRC,--ksrc) $(if $(filter 1 yes y,$(RESET)),--reset)

export:
	$(MOLAB) export $(call opt,KSRC,--ksrc) $(call opt,BASE_COMMIT,--base-commit)

kernel:
	$(MOLAB) kernel $(VOPTS) $(KOPTS)

initramfs:
	$(MOLAB) initramfs $(VOPTS) $(KOPTS)

boot:
	$(MOLAB) boot $(VOPTS) $(KOPTS) $(BOPTS) $(call opt,SUITES,--suites) $(call opt,ARGS,--args)

# A shell in the guest of make boot; BUILD=1 builds what is missing first.
shell:
	$(MOLAB) shell $(VOPTS) $(KOPTS) $(call opt,ACCEL,--accel) $(call opt,SMP,--smp) \
		$(call opt,TIMEOUT,--timeout) $(if $(filter 1 yes y,$(BUILD)),--build)

test:
	$(MOLAB) test $(KOPTS) $(BOPTS) $(call opt,SCOPE,--scope) $(call opt,SUITES,--suites) \
		$(call opt,BREAK,--break)

# What CI's make test leaves out (docs/testing.md): every suite whole (the
# full scope: every engine per reason, the upstream selftests, host_kit,
# longer storms) on the debug kernels, then every kept path once (the ci
# scope) on the kasan flavour: KASAN's job is each path once, and the full
# scope at KASAN's 2-3x would take about 3 hours on its own.
test-full:
	$(MOLAB) test --scope full $(KOPTS) $(BOPTS) $(call opt,SUITES,--suites)
	$(MOLAB) test --scope ci --skip-setup --skip-unit --flavour kasan --timeout 7200 \
		$(BOPTS) $(call opt,SUITES,--suites)

check:
	$(MOLAB) check $(KOPTS)

check-each:
	$(MOLAB) check --each --flavour $(or $(FLAVOUR),perf) $(call opt,KSRC,--ksrc)

unit:
	$(PYTHON) -m pytest -q lab/tests

bench:
	$(MOLAB) bench $(if $(filter 1 yes y,$(QUICK)),--quick) $(call opt,PRESET,--preset) \
		$(call opt,ROUNDS,--rounds) $(call opt,BENCH_ARGS,--args) $(call opt,KSRC,--ksrc)

deb:
	$(MOLAB) deb $(call opt,VARIANT,--variant) $(call opt,LSMOD,--lsmod) $(call opt,KSRC,--ksrc)

test-kit:
	$(MOLAB) kit-test

host-bench:
	$(MOLAB) host-bench $(call opt,PRESET,--preset) $(call opt,BENCH_ARGS,--args)

host-report:
	$(MOLAB) host-report $(RUNS)

# Unknown targets: one line, exit 2, like the CLI.
Makefile: ;
%:
	@echo "molab: error: unknown make target '$@'; run 'make help'" >&2; exit 2
