"""The examples' sizes: the defaults suit a GPU; ``--quick`` (and any CPU
device, where the defaults would take minutes) picks sizes that finish in
about a minute on a 2-core machine.  Sizes given on the command line win."""
from __future__ import annotations

import polyarray as pa


def on_cpu(target) -> bool:
    """Whether ``target`` runs on the host's CPU (NumPy, or OpenCL on PoCL)."""
    if target == "numpy":
        return True
    if target == "opencl":
        import pyopencl as cl
        return not pa.opencl_queue().device.type & cl.device_type.GPU
    return False


def parse_args(parser, quick, argv=None, target_option="target"):
    """``parser``'s arguments, with ``quick`` (``{dest: value}``) as the
    defaults under ``--quick`` or on a CPU device; says which sizes it took."""
    parser.add_argument("--quick", action="store_true",
                        help="small sizes (the default on a CPU device)")
    args = parser.parse_args(argv)
    target = (target_option and getattr(args, target_option)) or pa.get_default_target()
    if args.quick or on_cpu(target):
        why = "--quick" if args.quick else f"{target} runs on the CPU"
        parser.set_defaults(**quick)
        args = parser.parse_args(argv)
        print(f"small sizes ({why}; give sizes to override)", flush=True)
    return args
