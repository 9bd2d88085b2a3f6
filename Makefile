# profilefs: one Makefile for the whole tree. Objects go under build/,
# the binary to bin/profilefs. `make V=1` shows commands, `make SANITIZE=address,undefined`
# builds an instrumented binary, `make WERROR=1` (as CI does) turns warnings into errors.

VERSION := 0.1.0
COMMIT  := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

CC      ?= cc
PKGS    := fuse3 libprotobuf-c zlib libmicrohttpd libcurl libbpf libelf libdw
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -fno-omit-frame-pointer -pthread -D_FILE_OFFSET_BITS=64 \
           -DPROFILEFS_VERSION='"$(VERSION)"' -DPROFILEFS_COMMIT='"$(COMMIT)"' \
           $(shell pkg-config --cflags $(PKGS)) -I$(B)/gen -Istore -Icollector -Ifs
LDLIBS  += $(shell pkg-config --libs $(PKGS)) -lrocksdb -lpthread -lm
ifdef WERROR
CFLAGS  += -Werror
endif
ifdef SANITIZE
CFLAGS  += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif

# Out-of-tree builds: make O=/tmp/x puts objects in /tmp/x/build and the binary in /tmp/x/bin.
O       ?= .
B       := $(O)/build
BIN     := $(O)/bin

ifeq ($(V),1)
Q :=
else
Q := @
endif

.DELETE_ON_ERROR:
.PHONY: all clean test unit check

GEN      := $(B)/gen/profile.pb-c.c $(B)/gen/profile.pb-c.h
LIB_SRC  := $(wildcard store/*.c) $(wildcard collector/*.c) $(filter-out fs/main.c,$(wildcard fs/*.c))
LIB_OBJ  := $(B)/gen/profile.pb-c.o $(patsubst %.c,$(B)/%.o,$(LIB_SRC))
MAIN_OBJ := $(B)/fs/main.o
TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_BIN := $(patsubst tests/unit/%.c,$(B)/tests/%,$(TEST_SRC))
# Fuzz harnesses linked with tests/fuzz/replay.c: they replay the corpus
# (tests/integration/fuzz-replay.sh); scripts/fuzz.sh builds them for libFuzzer.
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(patsubst tests/fuzz/%.c,$(B)/tests/%,$(FUZZ_SRC))

all: $(BIN)/profilefs $(TEST_BIN) $(FUZZ_BIN)

$(B)/gen/profile.pb-c.c $(B)/gen/profile.pb-c.h &: store/profile.proto
	@mkdir -p $(B)/gen
	@echo "  PROTOC  $<"
	$(Q)protoc-c -Istore --c_out=$(B)/gen $<

$(B)/gen/profile.pb-c.o: $(B)/gen/profile.pb-c.c
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -Wno-missing-prototypes -c -o $@ $<

$(B)/%.o: %.c $(GEN)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

# The eBPF sampler: vmlinux.h from the running kernel's BTF, the BPF objects
# compiled by clang (no sanitizers, DWARF stripped, BTF kept for CO-RE) and a
# libbpf skeleton that collector/ebpf.c includes.
BPF_CLANG   ?= clang
BPF_STRIP   ?= llvm-strip
BPFTOOL     ?= bpftool
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
BPF_ARCH    := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
BPF_SRC     := $(wildcard bpf/*.bpf.c)
BPF_SKEL    := $(patsubst bpf/%.bpf.c,$(B)/gen/%.skel.h,$(BPF_SRC))

$(B)/gen/vmlinux.h:
	@mkdir -p $(B)/gen
	@echo "  BTF     $@"
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

$(B)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(B)/gen/vmlinux.h
	@mkdir -p $(B)/bpf
	@echo "  BPF     $<"
	$(Q)$(BPF_CLANG) -O2 -g -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(B)/gen -Ibpf -c -o $@ $<
	$(Q)$(BPF_STRIP) -g $@

$(B)/gen/%.skel.h: $(B)/bpf/%.bpf.o
	@echo "  SKEL    $@"
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@

$(B)/collector/ebpf.o: $(BPF_SKEL)
.SECONDARY: $(patsubst bpf/%.bpf.c,$(B)/bpf/%.bpf.o,$(BPF_SRC))

$(B)/libprofilefs.a: $(LIB_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(BIN)/profilefs: $(MAIN_OBJ) $(B)/libprofilefs.a
	@mkdir -p $(BIN)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/tests/%: tests/unit/%.c $(B)/libprofilefs.a
	@mkdir -p $(B)/tests
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -Wno-missing-prototypes $(LDFLAGS) -o $@ $< $(B)/libprofilefs.a $(LDLIBS) -lcmocka

$(B)/tests/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(B)/libprofilefs.a
	@mkdir -p $(B)/tests
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< tests/fuzz/replay.c $(B)/libprofilefs.a $(LDLIBS)

unit: $(TEST_BIN)
	$(Q)for t in $(TEST_BIN); do $$t || exit 1; done

test: all
	$(Q)PROFILEFS_BIN=$(abspath $(BIN))/profilefs PROFILEFS_BUILD=$(abspath $(B)) bash tests/run.sh

clean:
	rm -rf $(B) $(BIN)

-include $(wildcard $(B)/*/*.d $(B)/*/*/*.d)
