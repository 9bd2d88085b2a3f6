# profilefs: one Makefile for the whole tree. Objects go under build/,
# the binary to bin/profilefs. `make V=1` shows commands, `make SANITIZE=address,undefined`
# builds an instrumented binary, `make WERROR=1` (as CI does) turns warnings into errors.

VERSION := 0.1.0
COMMIT  := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

CC      ?= cc
PKGS    := fuse3 libprotobuf-c zlib libmicrohttpd libcurl
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -fno-omit-frame-pointer -pthread -D_FILE_OFFSET_BITS=64 \
           -DPROFILEFS_VERSION='"$(VERSION)"' -DPROFILEFS_COMMIT='"$(COMMIT)"' \
           $(shell pkg-config --cflags $(PKGS)) -Ibuild/gen -Istore -Icollector -Ifs
LDLIBS  += $(shell pkg-config --libs $(PKGS)) -lrocksdb -lpthread -lm
ifdef WERROR
CFLAGS  += -Werror
endif
ifdef SANITIZE
CFLAGS  += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

.DELETE_ON_ERROR:
.PHONY: all clean test unit check

GEN      := build/gen/profile.pb-c.c build/gen/profile.pb-c.h
LIB_SRC  := $(wildcard store/*.c) $(wildcard collector/*.c) $(filter-out fs/main.c,$(wildcard fs/*.c))
LIB_OBJ  := build/gen/profile.pb-c.o $(patsubst %.c,build/%.o,$(LIB_SRC))
MAIN_OBJ := build/fs/main.o
TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_BIN := $(patsubst tests/unit/%.c,build/tests/%,$(TEST_SRC))

all: bin/profilefs $(TEST_BIN)

build/gen/profile.pb-c.c build/gen/profile.pb-c.h: store/profile.proto
	@mkdir -p build/gen
	@echo "  PROTOC  $<"
	$(Q)protoc-c -Istore --c_out=build/gen $<

build/gen/profile.pb-c.o: build/gen/profile.pb-c.c
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -Wno-missing-prototypes -c -o $@ $<

build/%.o: %.c $(GEN)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

build/libprofilefs.a: $(LIB_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

bin/profilefs: $(MAIN_OBJ) build/libprofilefs.a
	@mkdir -p bin
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

build/tests/%: tests/unit/%.c build/libprofilefs.a
	@mkdir -p build/tests
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -Wno-missing-prototypes $(LDFLAGS) -o $@ $< build/libprofilefs.a $(LDLIBS) -lcmocka

unit: $(TEST_BIN)
	$(Q)for t in $(TEST_BIN); do $$t || exit 1; done

test: all
	$(Q)bash tests/run.sh

clean:
	rm -rf build bin

-include $(wildcard build/*/*.d build/*/*/*.d)
