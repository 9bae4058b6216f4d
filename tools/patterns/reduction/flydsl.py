"""The reduction cell in FlyDSL: what patterns/reduction/flydsl/kernel.py promises, for op.json and the records."""

from tools.dsls.flydsl import NO_SCRATCH, PRIVATE_0

CELL = {
    "summary": "FlyDSL row reduction (CDNA3/CDNA4): a power-of-two lane group (1-64 lanes) or 2-16 whole 64-lane "
               "waves per row, 128-bit buffer loads, fp32 in-lane tree, DPP wave reduction, one LDS step across "
               "waves; rows stay in VGPRs up to 32768 elements (softmax/rmsnorm read HBM once), a looped two-pass "
               "path beyond",
    "semantics": "Any M, N >= 1 and any row stride >= N (the vector width drops to what N, the stride and the "
                 "pointers allow), every tensor under 2 GiB. sum, mean and max return [M]; softmax and rmsnorm "
                 "return [M, N]. NaN propagates as in torch: a row holding a NaN has a NaN max and a NaN softmax "
                 "row (`arith.maximumf`; gfx942 has no NaN-propagating max instruction, so a v_max3 tree plus a "
                 "NaN flag).",
    "phase1": {"boundaries": "N not a multiple of the 128-bit vector, rows whose start is not 16-byte aligned (the "
                             "vector width drops), and very long rows (N > 32768) that do not fit one workgroup's "
                             "VGPRs (a looped two-pass path)."},
    "levers": [
        "Small M with long rows (8 x 131072 uses 8 of 304 CUs): split each row over several workgroups, partial "
        "(max, sum) to a buffer, then a small combine kernel or a last-workgroup-done atomic (CDNA has no clusters "
        "or distributed shared memory).",
        "Time it on the GPU: sweep values per lane (16/32/64), rows per workgroup and the looped slice; gfx942 "
        "bf16 softmax is ~15 VALU per element (no hardware bf16 convert) vs ~9 on gfx950, about half the CU's "
        "VALU rate at HBM speed on paper, so check VALU busy with rocprofv3.",
        "Branchless tails and a pipelined loop: offsets past num_records instead of exec-masked branches, prefetch "
        "the next slice in the looped path, non-temporal output stores to keep the Infinity Cache for pass 2.",
    ],
    "isa_markers": {
        "required": [
            {"text": "buffer_load_dwordx4", "meaning": "128-bit buffer loads of the row"},
            {"text": "row_bcast:31", "meaning": "DPP wave64 reduction (row_shr steps, then row_bcast across rows)"},
            {"text": "s_barrier", "meaning": "the cross-wave step through LDS"},
            PRIVATE_0,
        ],
        "forbidden": NO_SCRATCH,
    },
    "framework_facts": [
        "The vector width is a compile-time choice: kernel.py compiles one variant per (op, dtype, vector width, "
        "lanes per row) and picks the widest width dividing N, the row stride and every tensor's element offset.",
        "fx.coop.warp_reduce lowers a full-wave reduction to DPP row_shr:1,2,4,8, row_bcast:15/31 and "
        "v_readlane_b32 of lane 63; a half wave or less uses a DPP butterfly and one ds_swizzle.",
    ],
    "pitfalls": [
        {"pitfall": "Vector.reduce(ReductionOp.MAX) lowers to maxnumf and drops NaN (fx.coop.warp_reduce uses it "
                    "on a Vector input), unlike fx.max (maximumf)",
         "fix": "reduce in-lane with your own fx.max tree and pass fp32 scalars to the wave reduction",
         "source": "FlyDSL 0.4.2 behaviour, seen in the ISA"},
        {"pitfall": "a (1, k) register tensor (vec = 1), or fill() on it, fails in fly-layout-lowering with only "
                    "'Failure while executing pass pipeline'",
         "fix": "a 1-D register tensor of vec*k elements viewed with logical_divide; FLYDSL_DUMP_IR=1 shows the "
                "last good stage", "source": "FlyDSL 0.4.2 compile error"},
        {"pitfall": "a Python `while` in a kernel body becomes scf.while, so trace-time loops over lists fail "
                    "('carried variable does not match the region entry')",
         "fix": "keep trace-time loops in undecorated helpers; helpers with dynamic ifs are @flyc.jit",
         "source": "FlyDSL 0.4.2 AST rewriter"},
        {"pitfall": "inside fx.fastmath('afn') a division becomes a multiply by v_rcp and rsqrt becomes v_sqrt + "
                    "v_rcp", "fix": "keep exact divisions such as mean's /N outside the fast-math block",
         "source": "FlyDSL 0.4.2 ISA"},
    ],
}
