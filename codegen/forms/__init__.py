"""Kernel forms: one builder module per family.  Each takes a group (or a
reduction's flattened view) and the policy's ``Choice``, emits the kernel's
instructions and domain, and hands them to ``Assembler.finish``.  Builders
decide nothing (the policy did) and call no other form; shared pieces live
in ``parts`` and the loopy reduction operations in ``reduction_ops``.

  elementwise     flat, elements per item, axes, transposed tile
  reduce          thread, group, neutral (argmax/argmin: one pass over pairs)
  two_stage       few outputs, long reductions: partials, then a combine
  split_columns   few outputs along the contiguous axes: column chunks
  lanes           CPU: lanes of accumulators along the contiguous axis
  matmul          tiled and register-tiled matrix products of any size,
                  batched, split-K, with an elementwise epilogue
  mma_matmul      CUDA float64 matrix products on the FP64 tensor cores (DMMA)
  cpu_matmul      CPU matrix products: packed operands, vector register blocks
  rows            fused row reductions with their elementwise readers
  recurrence      rows in order, each from the rows before (a rolled loop)
"""
