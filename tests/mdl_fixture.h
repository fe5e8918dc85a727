/* mdl_fixture — built-in hardware and model specs for the tests that need a
 * real GPU or LLM: the test fails with the loader's message when a name is
 * not built in. Header-only (static); for tests that include cmocka.h first. */
#ifndef KVSIM_TESTS_MDL_FIXTURE_H
#define KVSIM_TESTS_MDL_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "models/mdl.h"

/* Toy GPU: 1e12 FLOP/s, 1e11 B/s HBM, 1e10 B/s NVLink, 1e9 B/s PCIe and NIC.
 * Toy GQA model of `layers` layers: hidden 64, 4 heads of 16, 2 KV heads,
 * intermediate 128, vocab 100, BF16. Per GPU at tp 1 the GEMMs are qkv
 * 64x128, o 64x64, up 64x256, down 128x64 (k x n): 36,864 parameters a
 * layer, plus 2 x 6,400 of embeddings. */
__attribute__((unused)) static void mf_toy(mdl_hw_t *hw, mdl_llm_t *m, uint32_t layers)
{
	memset(hw, 0, sizeof *hw);
	snprintf(hw->name, sizeof hw->name, "toy");
	hw->hbm_bytes = 1000000000;
	hw->hbm_bw = 1e11;
	hw->flops_bf16 = 1e12;
	hw->nvlink_bw = 1e10;
	hw->pcie_bw = 1e9;
	hw->nic_bw = 1e9;
	*m = (mdl_llm_t){.layers = layers, .hidden = 64, .heads = 4, .kv_heads = 2,
	                 .head_dim = 16, .intermediate = 128, .vocab = 100, .dtype_bytes = 2,
	                 .weight_bytes = 2, .params_total = layers * 36864ULL + 12800,
	                 .params_active = layers * 36864ULL + 12800, .attention = MDL_ATTN_GQA};
	snprintf(m->name, sizeof m->name, "toy");
}

/* The default compute terms with the roofline terms given: GEMM MFU, the
 * FLOPs at half of it, weight MBU, per-GEMM and per-small-kernel ns, the
 * small kernels' bandwidth share, the GEMM tile and the q-norm. */
__attribute__((unused)) static mdl_compute_params_t mf_terms(double gemm_mfu, double half_flops,
                                                            double weight_mbu, double gemm_ns,
                                                            double small_ns, double elt_bw,
                                                            double tile, double q)
{
	mdl_compute_params_t p = mdl_compute_params_default;
	p.gemm_mfu = gemm_mfu;
	p.gemm_half_flops = half_flops;
	p.weight_mbu = weight_mbu;
	p.gemm_kernel_ns = gemm_ns;
	p.small_kernel_ns = small_ns;
	p.elt_bw_eff = elt_bw;
	p.gemm_tile_tokens = tile;
	p.roofline_q = q;
	return p;
}

/* Fills *hw with the built-in GPU hw_name and, when llm_name is set, *m with
 * the built-in model llm_name. */
__attribute__((unused)) static void mf_builtin(const char *hw_name, mdl_hw_t *hw,
                                               const char *llm_name, mdl_llm_t *m)
{
	err_t e = {0};
	int rc = mdl_hw_builtin(hw_name, hw, &e);
	if (!rc && llm_name)
		rc = mdl_llm_builtin(llm_name, m, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
}

#endif
