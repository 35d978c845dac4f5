"""A program's kernels, from plan groups to generated code.

  assemble            per group: the shape class, the policy's choice, the
                      form's builder (``forms/``), then the loopy kernel with
                      its schedule (``Assembler.finish``)
  reuse               groups that are the same code on other buffers, built
                      once; generated code kept across programs
  concurrent_codegen  the distinct kernels generated in forked children
"""
