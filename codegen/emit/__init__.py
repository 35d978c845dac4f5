"""Device C: what the generated source says beyond loopy's own printing.

  cfuncs          value ops with NumPy semantics as typed C helpers
                  (``pa_<op>_<dtype>``), emitted as preambles
  pair_helpers    the (value, index) combine of argmax / argmin
  runtime_checks  checked gathers and integer powers, the error buffer
  user_callables  the loopy side of user C functions (``user_functions``)
  pending         assignments held back until outlining has decided
  cprint          expressions printed as C with loopy's semantics
  outline         a long elementwise chain as one C function
  noinline        large helpers and regions compiled once per source

Nothing here decides a kernel's form or reads the DAG's plan: the numbers
that outlining and the helpers compiled once read are the thresholds the
caller gives them.
"""
