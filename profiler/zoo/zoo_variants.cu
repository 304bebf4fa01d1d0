/*
 * zoo_variants.cu: the registry of the kernel zoo (interface in zoo.h): every
 * variant, one family at one size or launch shape, and what each family is.
 *
 * Each family owns its buffers and kernels (kernels_*.cu, by category); the
 * harness (zoo_main.cu and the files it names) owns timing and co-runs.
 * Categories follow the Mosaic paper's Table 8.
 *
 * family          category  what makes it that category
 * --------------  --------  -------------------------------------------------
 * copy            MEMORY    16-byte loads and stores, no arithmetic: pure
 *                           DRAM streaming (2 bytes moved per byte copied).
 * triad           MEMORY    a = b + s*c: 2 reads and 1 write per FMA.
 * silu_and_mul    MEMORY    LLM MLP gate: ~10 flops per 6 bytes (bf16).
 * rmsnorm         MEMORY    one block per row, two passes over the row; a
 *                           handful of flops per 8 bytes.
 * softmax         MEMORY    row-wise, one warp (short rows) or one block
 *                           (long rows) per row; one exp per 8 bytes.
 * batchnorm       MEMORY    inference NCHW, one FMA per 8 bytes.
 * stencil3d       MEMORY    7-point stencil; neighbours come from L1/L2, so
 *                           DRAM sees about one read and one write a point.
 * transpose       MEMORY    (naive variants only) strided stores, every
 *                           warp store touches 32 sectors.
 * fma             COMPUTE   independent FMA chains in registers, 4 bytes
 *                           written per thread: arithmetic only.
 * gemm_cublas     COMPUTE   cuBLAS bf16 (tensor cores) and fp32 SGEMM,
 *                           O(n^3) flops on O(n^2) bytes.
 * attention       COMPUTE   flash-style, K/V tiles in shared memory, fp32
 *                           FMA on CUDA cores: 4*S*D flops per query row.
 * conv            COMPUTE   direct 3x3 conv, smem tiles of input and weights,
 *                           16 output channels of FMAs per input load.
 * conv_cudnn      COMPUTE   the same shapes through cuDNN (only when built
 *                           with -DZOO_WITH_CUDNN, linked with -lcudnn).
 * pointer_chase   LATENCY   one dependent load after another through a random
 *                           cycle; few chains, so bandwidth stays low.
 * gemv_cublas     LATENCY   matrix-vector product: streams A once, short
 *                           dot products, little reuse (as in Table 8).
 * spmv            LATENCY   CSR with random column indices: gathers of x
 *                           that hit DRAM or L2 at random.
 * histogram       SMEM      shared-memory atomics, contention set by data
 *                           skew and bins; replicated sub-histograms.
 * scan            SMEM      tile staged in smem, serial per-thread scans at
 *                           conflict-free padded strides, warp-shuffle scan.
 * transpose       SMEM      (tiled variants) 32x32 tile through smem, padded
 *                           or deliberately bank-conflicted.
 * reduce          SMEM      classic shared-memory tree reduction with a
 *                           __syncthreads per level.
 *
 * Each variant in the table carries an estimate made before measuring
 * (bytes over 4.3 TB/s for memory-bound code; flops over ~790 TFLOP/s for
 * bf16 tensor cores, ~50 TFLOP/s for cuBLAS SGEMM or a stated fraction of
 * the 67 TFLOP/s fp32 FMA peak for our own kernels; steps times a load
 * latency for pointer chasing) and the time one launch took on an H200
 * alone (mean of 10). Measured, all lie between 68 us and 2.7 ms. Where the
 * two differ much, the measurement shows what the kernel really is: the
 * naive transpose, the 64-thread stencil and spmv run at 0.5-1 TB/s.
 * M and G in names are binary (MiB, GiB).
 *
 * Build: profiler/zoo/CMakeLists.txt builds every family into mosaic-zoo
 *   (nvcc -arch=sm_90, linked with cuBLAS). For conv_cudnn add
 *   -DZOO_WITH_CUDNN when compiling and -lcudnn when linking; where cuDNN
 *   comes only from pip (site-packages/nvidia/cudnn), add -I and -L for its
 *   include/ and lib/ (lib/ has only libcudnn.so.9: link it by path or with
 *   -l:libcudnn.so.9) and put lib/ on LD_LIBRARY_PATH at run time.
 *
 * The "H200:" times in the table were measured on an H200 (132 SMs, driver
 * 580.159.04, CUDA 13.0); the dataset's own timings of every variant are in
 * profiler/data/h200/ (docs/dataset.md).
 */
#include "kernels_common.h"

/* ======================================================================== */
/* The variant table                                                          */
/* ======================================================================== */

#define ZV(fam, name, cat, p0, p1, p2, p3)                                  \
    {                                                                       \
        #fam, name, cat, {(long)(p0), (long)(p1), (long)(p2), (long)(p3)},  \
            fam##_ws, fam##_setup, fam##_launch, fam##_check, zs_teardown   \
    }

/* Per variant: "~t" is the estimate made before measuring, "H200:" the
 * mean of 10 launches measured on an H200 (rotating input copies, one
 * stream, nothing else running); "ws" is the working set (bytes read +
 * written). */
extern "C" const struct zoo_variant zoo_variants[] = {
    /* ---- MEMORY ---- */
    /* copy {bytes, blocks (0 = auto), threads} */
    ZV(copy, "copy_128M", ZOO_MEMORY, 128 * MiB, 0, 256, 0),      /* ws 256 MiB, ~62 us, 8192 blocks; H200: 68 us */
    ZV(copy, "copy_256M_half", ZOO_MEMORY, 256 * MiB, 66, 512, 0), /* ws 512 MiB; 66 blocks (half the SMs): ~150-250 us; H200: 156 us */
    ZV(copy, "copy_512M_w1", ZOO_MEMORY, 512 * MiB, 132, 1024, 0), /* ws 1 GiB, one wave of 1024-thread blocks, ~250 us; H200: 273 us */
    ZV(copy, "copy_1G", ZOO_MEMORY, 1 * GiB, 0, 128, 0),          /* ws 2 GiB, ~500 us, 131072 blocks of 128; H200: 513 us */

    /* triad {bytes per array, blocks (0 = auto), threads} */
    ZV(triad, "triad_128M", ZOO_MEMORY, 128 * MiB, 0, 256, 0),       /* ws 384 MiB, ~94 us; H200: 106 us */
    ZV(triad, "triad_256M_b64", ZOO_MEMORY, 256 * MiB, 0, 64, 0),    /* ws 768 MiB, ~187 us, 64-thread blocks; H200: 188 us */
    ZV(triad, "triad_512M_w2", ZOO_MEMORY, 512 * MiB, 264, 512, 0),  /* ws 1.5 GiB, ~375 us, 2 blocks/SM; H200: 396 us */

    /* silu_and_mul {T, D, dtype (1 bf16), threads} */
    ZV(silu_and_mul, "silu_and_mul_bf16_4096x11008", ZOO_MEMORY, 4096, 11008, 1, 128),   /* ws 270 MB, ~63 us; H200: 72 us */
    ZV(silu_and_mul, "silu_and_mul_bf16_16384x14336", ZOO_MEMORY, 16384, 14336, 1, 256), /* ws 1.41 GB, ~330 us; H200: 323 us */
    ZV(silu_and_mul, "silu_and_mul_f32_8192x4096", ZOO_MEMORY, 8192, 4096, 0, 512),      /* ws 403 MB, ~94 us; H200: 106 us */

    /* rmsnorm {rows, hidden, threads} */
    ZV(rmsnorm, "rmsnorm_4096x8192", ZOO_MEMORY, 4096, 8192, 256, 0),      /* ws 256 MiB, ~62 us; H200: 93 us */
    ZV(rmsnorm, "rmsnorm_16384x4096", ZOO_MEMORY, 16384, 4096, 128, 0),    /* ws 512 MiB, ~125 us; H200: 183 us */
    ZV(rmsnorm, "rmsnorm_8192x16384", ZOO_MEMORY, 8192, 16384, 1024, 0),   /* ws 1 GiB, ~250 us; H200: 282 us */
    ZV(rmsnorm, "rmsnorm_128x262144", ZOO_MEMORY, 128, 262144, 1024, 0),   /* ws 256 MiB, 128 blocks (< 1 wave), 2nd pass from L2: ~100-200 us; H200: 125 us */

    /* softmax {rows, cols, mode (0 warp/row, 1 block/row), threads} */
    ZV(softmax, "softmax_warp_65536x1024", ZOO_MEMORY, 65536, 1024, 0, 256), /* ws 512 MiB, ~125 us; H200: 132 us */
    ZV(softmax, "softmax_warp_262144x256", ZOO_MEMORY, 262144, 256, 0, 128), /* ws 512 MiB, ~125 us; H200: 140 us */
    ZV(softmax, "softmax_block_8192x8192", ZOO_MEMORY, 8192, 8192, 1, 512),  /* ws 512 MiB, ~125 us (+L2 re-read); H200: 144 us */
    ZV(softmax, "softmax_block_2048x65536", ZOO_MEMORY, 2048, 65536, 1, 1024), /* ws 1 GiB, ~250-350 us (2nd read partly DRAM); H200: 399 us */

    /* batchnorm {N, C, H*W, threads} */
    ZV(batchnorm, "batchnorm_64x256x56x56", ZOO_MEMORY, 64, 256, 56 * 56, 256),     /* ws 411 MB, ~96 us, 16384 blocks; H200: 112 us */
    ZV(batchnorm, "batchnorm_64x128x112x112", ZOO_MEMORY, 64, 128, 112 * 112, 512), /* ws 822 MB, ~191 us; H200: 201 us */
    ZV(batchnorm, "batchnorm_256x512x14x14", ZOO_MEMORY, 256, 512, 14 * 14, 64),    /* ws 205 MB, ~50-70 us, 131072 tiny blocks; H200: 83 us */

    /* stencil3d {nx, ny, nz, block shape} */
    ZV(stencil3d, "stencil3d_320", ZOO_MEMORY, 320, 320, 320, SHAPE3(32, 4, 2)),  /* ws 262 MB, ~61 us, 256 thr; H200: 130 us */
    ZV(stencil3d, "stencil3d_448", ZOO_MEMORY, 448, 448, 448, SHAPE3(64, 4, 4)),  /* ws 719 MB, ~167 us, 1024 thr; H200: 459 us */
    ZV(stencil3d, "stencil3d_512", ZOO_MEMORY, 512, 512, 512, SHAPE3(32, 2, 1)),  /* ws 1.07 GB, ~250 us, 64 thr; H200: 1.26 ms */

    /* transpose, naive (MEMORY) {rows, cols, mode 0, block rows} */
    ZV(transpose, "transpose_naive_8192", ZOO_MEMORY, 8192, 8192, 0, 8),        /* ws 512 MiB; scattered stores: ~200-400 us; H200: 1.07 ms */
    ZV(transpose, "transpose_naive_16384x4096", ZOO_MEMORY, 16384, 4096, 0, 32), /* ws 512 MiB, 1024-thread blocks; H200: 994 us */

    /* ---- COMPUTE ---- */
    /* fma {blocks, threads, iters, chains}; time = FMAs / 33.4 T FMA/s */
    ZV(fma, "fma_w1_b256_c8", ZOO_COMPUTE, 132, 256, 24576, 8),    /* 6.6e9 FMA, one wave, ~200 us; H200: 220 us */
    ZV(fma, "fma_8448_b128_c8", ZOO_COMPUTE, 8448, 128, 1024, 8),  /* 8.9e9 FMA, 4 waves at 16 blocks/SM, ~265 us; H200: 304 us */
    ZV(fma, "fma_264_b1024_c32", ZOO_COMPUTE, 264, 1024, 512, 32), /* 4.4e9 FMA, 32 chains (more registers), ~133 us; H200: 146 us */
    ZV(fma, "fma_66_b64_c32", ZOO_COMPUTE, 66, 64, 8192, 32),      /* 1.1e9 FMA on half the SMs, 2 warps each: ~130 us; H200: 171 us */

    /* gemm_cublas {M, N, K, dtype (1 bf16 tensor core, 0 fp32 SGEMM)} */
    ZV(gemm_cublas, "gemm_cublas_bf16_4096", ZOO_COMPUTE, 4096, 4096, 4096, 1),           /* 137 GFLOP, ~180-220 us; H200: 174 us */
    ZV(gemm_cublas, "gemm_cublas_bf16_8192", ZOO_COMPUTE, 8192, 8192, 8192, 1),           /* 1.1 TFLOP, ~1.4 ms; H200: 1.39 ms */
    ZV(gemm_cublas, "gemm_cublas_bf16_2048x2048x8192", ZOO_COMPUTE, 2048, 2048, 8192, 1), /* 69 GFLOP, ~128 tiles = one wave, ~90-120 us; H200: 89 us */
    ZV(gemm_cublas, "gemm_cublas_f32_2048", ZOO_COMPUTE, 2048, 2048, 2048, 0),            /* 17 GFLOP at ~50 TFLOP/s, ~350 us; H200: 343 us */
    ZV(gemm_cublas, "gemm_cublas_f32_4096", ZOO_COMPUTE, 4096, 4096, 4096, 0),            /* 137 GFLOP, ~2.7 ms; H200: 2.69 ms */

    /* attention {B*H, S, BQ (threads), BK (K/V rows per smem tile)}; flops
     * 4*BH*S^2*64, at ~20-30 TFLOP/s fp32 */
    ZV(attention, "attention_bh64_s1024_q128_k32", ZOO_COMPUTE, 64, 1024, 128, 32),  /* 17 GFLOP, 512 blocks of 128, 16 KB smem, ~0.6-0.9 ms; H200: 847 us */
    ZV(attention, "attention_bh16_s2048_q64_k128", ZOO_COMPUTE, 16, 2048, 64, 128),  /* 17 GFLOP, 512 blocks of 64, 64 KB smem, ~0.6-0.9 ms; H200: 1.57 ms */
    ZV(attention, "attention_bh32_s512_q128_k128", ZOO_COMPUTE, 32, 512, 128, 128), /* 2.1 GFLOP, 128 blocks (one wave), 64 KB smem, ~150-250 us; H200: 189 us */
    ZV(attention, "attention_bh8_s4096_q256_k64", ZOO_COMPUTE, 8, 4096, 256, 64),    /* 34 GFLOP, 128 blocks of 256, 32 KB smem, ~1.5-2.5 ms; H200: 1.62 ms */

    /* conv {N, C (= K), H (= W), tile}; flops 2*N*C^2*H^2*9 at ~20 TFLOP/s */
    ZV(conv, "conv_n32_c64_h56_t16", ZOO_COMPUTE, 32, 64, 56, 16),   /* 7.4 GFLOP, 2048 blocks of 256, ~370 us; H200: 509 us */
    ZV(conv, "conv_n16_c128_h28_t8", ZOO_COMPUTE, 16, 128, 28, 8),   /* 3.7 GFLOP, 2048 blocks of 64, ~250 us (77% tile use); H200: 358 us */
    ZV(conv, "conv_n8_c256_h14_t16", ZOO_COMPUTE, 8, 256, 14, 16),   /* 1.85 GFLOP, 128 blocks (one wave), ~150-300 us; H200: 252 us */
    ZV(conv, "conv_n8_c64_h112_t32", ZOO_COMPUTE, 8, 64, 112, 32),   /* 7.4 GFLOP, 1024 blocks of 32x16, 24 KB smem, ~370 us; H200: 571 us */
#ifdef ZOO_WITH_CUDNN
    /* conv_cudnn {N, C, H}; cuDNN with TF32 allowed: a few times faster */
    ZV(conv_cudnn, "conv_cudnn_n32_c64_h56", ZOO_COMPUTE, 32, 64, 56, 0),  /* 7.4 GFLOP, ~50-150 us; H200: 89 us */
    ZV(conv_cudnn, "conv_cudnn_n16_c128_h28", ZOO_COMPUTE, 16, 128, 28, 0), /* 3.7 GFLOP, ~30-100 us; H200: 103 us */
    ZV(conv_cudnn, "conv_cudnn_n8_c64_h112", ZOO_COMPUTE, 8, 64, 112, 0),  /* 7.4 GFLOP, ~50-150 us; H200: 123 us */
#endif

    /* ---- LATENCY ---- */
    /* pointer_chase {footprint, blocks, threads, steps}; ~steps x latency */
    ZV(pointer_chase, "pointer_chase_1M", ZOO_LATENCY, 1 * MiB, 132, 64, 2048),    /* L2: ~2048 x 0.3 us = ~0.6 ms; H200: 455 us */
    ZV(pointer_chase, "pointer_chase_32M", ZOO_LATENCY, 32 * MiB, 132, 128, 1024), /* L2 (both halves): ~0.3-0.5 ms; H200: 310 us */
    ZV(pointer_chase, "pointer_chase_256M", ZOO_LATENCY, 256 * MiB, 132, 64, 1024), /* DRAM: ~1024 x 0.7 us = ~0.7 ms; H200: 616 us */
    ZV(pointer_chase, "pointer_chase_1G", ZOO_LATENCY, 1 * GiB, 66, 256, 512),     /* DRAM + TLB misses: ~0.4-0.6 ms; H200: 357 us */

    /* gemv_cublas {M, K, dtype (1 bf16 GemmEx N=1, 0 Sgemv)} */
    ZV(gemv_cublas, "gemv_cublas_f32_8192x8192", ZOO_LATENCY, 8192, 8192, 0, 0),     /* ws 256 MiB, ~62 us; H200: 89 us */
    ZV(gemv_cublas, "gemv_cublas_f32_16384x16384", ZOO_LATENCY, 16384, 16384, 0, 0), /* ws 1 GiB, ~250 us; H200: 260 us */
    ZV(gemv_cublas, "gemv_cublas_bf16_16384x16384", ZOO_LATENCY, 16384, 16384, 1, 0), /* ws 512 MiB, ~125 us; H200: 126 us */
    ZV(gemv_cublas, "gemv_cublas_bf16_32768x8192", ZOO_LATENCY, 32768, 8192, 1, 0),  /* ws 512 MiB, ~125 us; H200: 128 us */

    /* spmv {rows, cols, mode (0 warp/row, 1 thread/row), threads}; 40 nnz/row */
    ZV(spmv, "spmv_1M_x1M", ZOO_LATENCY, 1 << 20, 1 << 20, 0, 256),      /* ws ~340 MB, x in L2: ~100 us; H200: 339 us */
    ZV(spmv, "spmv_2M_x64M", ZOO_LATENCY, 2 << 20, 64 << 20, 0, 128),    /* ws ~0.95 GB, 84M random DRAM gathers: ~0.7-1 ms; H200: 2.05 ms */
    ZV(spmv, "spmv_2M_x2M_thread", ZOO_LATENCY, 2 << 20, 2 << 20, 1, 128), /* ws ~680 MB, scalar rows: ~0.3-0.5 ms; H200: 1.11 ms */

    /* ---- SMEM ---- */
    /* histogram {n, bins, PK(replicas, skewed), PK(blocks, threads)} */
    ZV(histogram, "histogram_256_uniform", ZOO_SMEM, 32 * MiB, 256, PK(8, 0), PK(264, 256)),   /* 128 MiB in, 128M atomics, 8 KB smem, ~250 us; H200: 72 us */
    ZV(histogram, "histogram_256_skewed", ZOO_SMEM, 32 * MiB, 256, PK(8, 1), PK(264, 256)),    /* same, ~88% on 8 bins of one bank; H200: 137 us */
    ZV(histogram, "histogram_4096_uniform", ZOO_SMEM, 64 * MiB, 4096, PK(4, 0), PK(132, 1024)), /* 64 KB smem, one wave, ~70-100 us; H200: 78 us */
    ZV(histogram, "histogram_4096_skewed", ZOO_SMEM, 64 * MiB, 4096, PK(1, 1), PK(528, 512)),  /* 16 KB smem, 4 blocks/SM, ~200-500 us; H200: 107 us */

    /* scan {n, threads, items}; uint32 */
    ZV(scan, "scan_64M_b256_i8", ZOO_SMEM, 64 * MiB, 256, 8, 0),     /* ws 512 MiB, 32768 blocks, 8.3 KB smem, ~125 us; H200: 142 us */
    ZV(scan, "scan_64M_b1024_i16", ZOO_SMEM, 64 * MiB, 1024, 16, 0), /* 4096 blocks, 66 KB smem, ~125-200 us; H200: 164 us */
    ZV(scan, "scan_128M_b128_i4", ZOO_SMEM, 128 * MiB, 128, 4, 0),   /* ws 1 GiB, 262144 blocks, 2 KB smem, ~250 us; H200: 295 us */

    /* transpose, tiled (SMEM) {rows, cols, mode (1 padded, 2 unpadded), block rows} */
    ZV(transpose, "transpose_tiled_8192", ZOO_SMEM, 8192, 8192, 1, 8),          /* ws 512 MiB, ~125 us; H200: 208 us */
    ZV(transpose, "transpose_tiled_16384x4096", ZOO_SMEM, 16384, 4096, 1, 32),  /* ws 512 MiB, 1024-thread blocks, ~125 us; H200: 334 us */
    ZV(transpose, "transpose_tiled_nopad_8192", ZOO_SMEM, 8192, 8192, 2, 8),    /* 32-way conflicts on the reads: ~150-250 us; H200: 384 us */

    /* reduce {n, threads, items} */
    ZV(reduce, "reduce_64M_b256_i4", ZOO_SMEM, 64 * MiB, 256, 4, 0),    /* 256 MiB, 65536 blocks: tree-bound, ~80-120 us; H200: 115 us */
    ZV(reduce, "reduce_128M_b64_i8", ZOO_SMEM, 128 * MiB, 64, 8, 0),    /* 512 MiB, 262144 blocks of 64, ~130-200 us; H200: 163 us */
    ZV(reduce, "reduce_256M_b1024_i16", ZOO_SMEM, 256 * MiB, 1024, 16, 0), /* 1 GiB, 16384 blocks, ~250 us; H200: 312 us */

    /* ---- HOLDOUT ----
     * Added in the second session, after the predictor was trained: other
     * sizes and launch shapes of existing families, measured on their own
     * (profiler/data/h200/holdout/) to check the shipped models on kernels
     * they never saw. Not part of the issue 3 dataset. */
    ZV(copy, "copy_64M", ZOO_MEMORY, 64 * MiB, 0, 256, 0),
    ZV(triad, "triad_64M_b128", ZOO_MEMORY, 64 * MiB, 0, 128, 0),
    ZV(rmsnorm, "rmsnorm_2048x16384", ZOO_MEMORY, 2048, 16384, 512, 0),
    ZV(softmax, "softmax_warp_131072x512", ZOO_MEMORY, 131072, 512, 0, 256),
    ZV(fma, "fma_2112_b256_c8", ZOO_COMPUTE, 2112, 256, 2048, 8),
    ZV(gemm_cublas, "gemm_cublas_bf16_3072", ZOO_COMPUTE, 3072, 3072, 3072, 1),
    ZV(attention, "attention_bh16_s1024_q128_k64", ZOO_COMPUTE, 16, 1024, 128, 64),
    ZV(conv, "conv_n16_c64_h56_t16", ZOO_COMPUTE, 16, 64, 56, 16),
    ZV(pointer_chase, "pointer_chase_8M", ZOO_LATENCY, 8 * MiB, 132, 64, 2048),
    ZV(histogram, "histogram_1024_uniform", ZOO_SMEM, 32 * MiB, 1024, PK(4, 0), PK(264, 256)),
    ZV(reduce, "reduce_64M_b512_i8", ZOO_SMEM, 64 * MiB, 512, 8, 0),
};

extern "C" const int zoo_n_variants = (int)(sizeof zoo_variants / sizeof zoo_variants[0]);

extern "C" const char *zoo_category_name(enum zoo_category c)
{
    switch (c) {
    case ZOO_MEMORY:
        return "MEMORY";
    case ZOO_COMPUTE:
        return "COMPUTE";
    case ZOO_LATENCY:
        return "LATENCY";
    case ZOO_SMEM:
        return "SMEM";
    }
    return "?";
}
