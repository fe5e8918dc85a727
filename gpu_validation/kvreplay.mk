# kvreplay: the host backend is built into $(BUILD)/kvreplay with gcc; the
# CUDA backend is a shared object, $(BUILD)/kvreplay_cuda.so, built with nvcc
# when it exists and loaded by kvreplay at run time (dlopen), so the binary
# runs, and skips cleanly, on machines without CUDA libraries.
KVREPLAY_RULES := 1
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc) $(shell command -v nvcc 2>/dev/null))
# sm_80 (A100), sm_90 (H100/H200) and PTX for newer GPUs.
NVCC_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90
KVREPLAY_OBJS := $(BUILD)/gpu_validation/kvreplay/main.o $(BUILD)/gpu_validation/kvreplay/host.o
KVREPLAY_CUDA := $(if $(NVCC),$(BUILD)/kvreplay_cuda.so)

$(BUILD)/kvreplay: $(KVREPLAY_OBJS) $(LIBS) | $(KVREPLAY_CUDA)
	$(CC) $(OPT) $(LDSAN) $(KVREPLAY_OBJS) $(LINK_LIBS) $(LDLIBS) -o $@

# cudart is linked statically (the object needs only the driver at run time);
# cuBLAS is found through the rpath of the toolkit that built it.
$(BUILD)/kvreplay_cuda.so: gpu_validation/kvreplay/cuda.cu gpu_validation/kvreplay/kvr_backend.h \
		gpu_validation/gv_replay.h gpu_validation/gv_meas.h models/mdl_xfer.h
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -std=c++17 $(NVCC_ARCH) -I. -Xcompiler -fPIC,-Wall -shared \
	  -cudart static $< -o $@ -L$(CUDA_HOME)/lib64 -lcublas -Xlinker -rpath,$(CUDA_HOME)/lib64

# `make install` also installs the CUDA backend where kvreplay looks for it
# (PREFIX/lib/kvsim, next to PREFIX/bin).
.PHONY: kvreplay-install-cuda
install: kvreplay-install-cuda
kvreplay-install-cuda: all
	[ ! -f $(BUILD)/kvreplay_cuda.so ] || { install -d $(DESTDIR)$(PREFIX)/lib/kvsim && \
	  install -m 755 $(BUILD)/kvreplay_cuda.so $(DESTDIR)$(PREFIX)/lib/kvsim/; }
