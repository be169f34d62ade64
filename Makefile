# unimem top-level Makefile. `make` builds the kernel modules and the user-space tools against
# the cached guest kernel (built on first use by scripts/build-kernel.sh).
SHELL := /bin/bash
KDIR ?= $(shell scripts/build-kernel.sh)
CACHE_ARGS := $(shell bash -c 'source scripts/lib/common.sh; kmake_args')
# Out-of-tree: the Kconfig symbols are set here rather than in the kernel's .config.
UNIMEM_CONFIG := CONFIG_UNIMEM_EUSRVMEM=m CONFIG_UNIMEM_MAILBOX=m CONFIG_UNIMEM_MBOX_ECHO=m CONFIG_UNIMEM_KRAM=m CONFIG_UNIMEM_NUMA=m CONFIG_UNIMEM_GSAS=m
# Against the debug kernel (UNIMEM_DEBUG_KERNEL=1, scripts/test.sh --debug-kernel) the modules are
# built from a clean copy of kernel/ into build/modules-debug/out (Kbuild's MO=), so the normal
# build's objects and .ko files next to the sources stay as they are (scripts/lib/common.sh,
# modules_src_copy). For the normal kernel MO_DIR is empty and they are built in place.
# The same for an arm64 kernel (UNIMEM_ARCH=arm64): build/modules-arm64/out.
MO_DIR := $(shell bash -c 'source scripts/lib/common.sh; if modules_apart; then modules_out; fi')
MODULES_SRC = $(if $(MO_DIR),$(shell bash -c 'source scripts/lib/common.sh; modules_src_copy'),$(CURDIR)/kernel)
KMAKE = $(MAKE) -C $(KDIR) M=$(MODULES_SRC) $(if $(MO_DIR),MO=$(MO_DIR)) $(CACHE_ARGS) $(UNIMEM_CONFIG)

.PHONY: all modules kconfig-check modules-clippy modules-fmt userspace gsas-pc clean check test setup cluster install uninstall dist

all: modules userspace

modules: kconfig-check
	$(KMAKE) modules

# The modules' Kconfig files against the kernel's .config (kbuild does not read them out of tree).
kconfig-check:
	@scripts/check-kconfig.sh $(KDIR) "$(UNIMEM_CONFIG)"

# Kernel build with clippy lints, as the kernel's own `make CLIPPY=1`.
modules-clippy:
	$(KMAKE) CLIPPY=1 modules

userspace:
	cargo build --release --workspace
	@userspace/gsas/gsas-pc.sh >/dev/null
	@userspace/dht/dht-pc.sh >/dev/null
	@userspace/shmem/shmem-pc.sh >/dev/null
	@userspace/fam/fam-pc.sh >/dev/null

# pkg-config file of libgsas for the build tree: target/release/pkgconfig/gsas.pc
# (PKG_CONFIG_PATH=$(CURDIR)/target/release/pkgconfig pkg-config --cflags --libs gsas).
# Install elsewhere with: userspace/gsas/gsas-pc.sh --install PREFIX. The same for libdht
# (dht.pc; userspace/dht/dht-pc.sh).
gsas-pc:
	userspace/gsas/gsas-pc.sh
	userspace/dht/dht-pc.sh

# Onto this host (as root) or staged: make install DESTDIR=/tmp/x PREFIX=/usr. Installs what `make`
# built and builds nothing (so that `sudo make install` leaves no root-owned build output); what goes
# where, and the variables: scripts/install.sh --help.
INSTALL_VARS := DESTDIR PREFIX BINDIR SBINDIR LIBDIR INCLUDEDIR DATADIR MANDIR DOCDIR SYSCONFDIR UNITDIR TMPFILESDIR UDEVRULESDIR SYSUSERSDIR KRELEASE
install:
	@$(foreach v,$(INSTALL_VARS),$(if $($(v)),$(v)='$($(v))')) scripts/install.sh

# What `make install` installed with the same settings, from its list (edited /etc files stay).
uninstall:
	@$(foreach v,$(INSTALL_VARS),$(if $($(v)),$(v)='$($(v))')) scripts/install.sh --uninstall

check:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	rustfmt --edition 2021 --config newline_style=Unix --check kernel/*/*.rs kernel/common/*.rs
	shellcheck -x -P SCRIPTDIR -S warning -e SC2043 scripts/*.sh scripts/lib/*.sh scripts/cluster scripts/bench/*.sh scripts/profile/*.sh scripts/peers/*.sh tests/cluster/*.sh tests/host/*.sh .ci/run userspace/*.sh userspace/*/*.sh userspace/shmem/oshcc userspace/shmem/oshc++ userspace/fam/famcc

# The kernel modules in the kernel's own Rust format (its .rustfmt.toml: edition 2021, Unix
# newlines, default width).
modules-fmt:
	rustfmt --edition 2021 --config newline_style=Unix kernel/*/*.rs kernel/common/*.rs

setup:
	scripts/setup.sh

# One relocatable archive that runs the virtual cluster and the benchmarks on any x86-64 Linux
# (kernel, guest image, modules, tools, QEMU with its libraries): build/unimem-<commit>.tar.xz.
# Packs what `make` built and builds nothing (scripts/dist.sh --help). Phony: dist/ is a directory.
dist:
	scripts/dist.sh

test:
	scripts/test.sh

clean:
	-$(KMAKE) clean
	cargo clean
