# make install PREFIX=/opt/gccl: every perf binary and tune, static, in
# PREFIX/bin under our names and nccl-tests' (all_reduce_perf, ...).
# scripts/install.sh does the work; FORCE=1 replaces files that are not ours.
PREFIX ?= /usr/local

.PHONY: install
install:
	bash scripts/install.sh $(if $(FORCE),--force) "$(PREFIX)"
