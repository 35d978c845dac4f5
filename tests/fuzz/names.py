"""Placeholder names: hostile ones (that a code generator might clash with) and
ordinary ones.

The fuzzer names its inputs from these lists so that a DAG also tests that
polyarray's generated C/OpenCL/CUDA source survives any user-chosen name.
Changing a list changes which DAG a seed builds.
"""
from __future__ import annotations


# C / C++ / OpenCL C / CUDA keywords, types, macros and builtins.
C_NAMES = """
auto break case char const continue default do double else enum extern float for
goto if inline int long register restrict return short signed sizeof static struct
switch typedef union unsigned void volatile while _Bool _Complex bool true false
class new delete this template typename namespace operator public private protected
virtual friend using try catch throw explicit mutable export nullptr constexpr
decltype static_cast reinterpret_cast asm alignas and or not xor bitand compl
kernel __kernel global __global local __local constant __constant private __private
__restrict__ __restrict read_only write_only half uchar ushort uint ulong size_t
ptrdiff_t float4 double2 image2d_t sampler_t event_t
get_local_id get_group_id get_global_id get_local_size get_num_groups barrier
CLK_LOCAL_MEM_FENCE CLK_GLOBAL_MEM_FENCE mem_fence convert_int as_float select mad
fma min max clamp mix exp sqrt tanh pow fmod floor copysign isnan printf
threadIdx blockIdx blockDim gridDim warpSize __syncthreads __shared__ __device__
__global__ __launch_bounds__ __int_as_float atomicAdd __ldg
NULL INFINITY NAN M_PI M_E HUGE_VAL FLT_MAX DBL_MAX INT_MAX CHAR_BIT MAXFLOAT EOF
__FILE__ __LINE__ __OPENCL_VERSION__ __CUDA_ARCH__ __CUDACC__ assert offsetof errno
main
""".split()

# Names polyarray's code generator and loopy emit (codegen/__init__.py buffers and
# kernels, lowering/builder.py temporaries and instruction ids, codegen/forms/ loops,
# codegen/schedule/ derived names, cfuncs.py helpers and their locals,
# loopy's accumulators, barriers and index macros), and polyarray's own
# expression variables (_0.., _in0..).
GENERATED_NAMES = """
i j k m g t u c uf row i0 i1 j0 j1 k0 c_outer c_inner i_inner i_outer j_inner j_outer
k_inner k_outer i0_inner_outer i0_inner_inner i1_inner j_outer
t0 t1 t2 v1 v2 v3 insn1 insn2 out0 out1 out2 data0 data1 out0_ext out0_part
out1_part out0_ext_part k0_elementwise k1_elementwise k0_rows k0_sum k1_sum k0_max
k0_argmax k0_argmax_ext k0_sum_s1 k0_sum_s2 k0_sum_c1 k0_sum_c2 k0_einsum k0_rows_0sum
acc_j acc_j0 acc_k acc_t acc_i neutral_j_inner red_j_inner_stage_0 l_barrier l_barrier_0
lid gid bIdx tIdx x_r x_fetch x_fetch_rule x_tile store_x_tile x_vec x_lane
x_dim_0_outer p_x p_i p1_x p1_i p2_x0 pa_add_int8 pa_maximum_float32
pa_posinf_float32 pa_neginf_int32 a b r q mod div fl T R W p_t0 p_v1
loopy_mod loopy_floor_div_int32 int_floor_div _0 _1 _in0 _in1
""".split()

PYTHON_NAMES = "self cls args kwargs bindings target schedule options device device_kind " \
               "tune fast_call _ __ __class__ None True False lambda def".split()

ORDINARY_NAMES = "x y z w a0 alpha beta weights bias inp data input values mask " \
                 "idx index count total".split()

# Pairs that a naive renaming scheme maps onto each other.
HOSTILE_PAIRS = [("x", "p_x"), ("i", "p_i"), ("t0", "p_t0"), ("v1", "p_v1"),
                 ("x", "x_r"), ("x", "x_fetch"), ("x", "p1_x"), ("p1_x", "p4_p1_x"),
                 ("x_r", "p1_x_r"), ("out0", "p_out0"), ("data0", "p_data0"),
                 ("i", "p1_i"), ("j0", "p2_j0"), ("k0_elementwise", "p_k0_elementwise"),
                 ("a" * 70 + "1", "a" * 70 + "2")]

UNICODE_NAMES = ["π", "δx", "ñ", "x_α"]

# names placeholder() may refuse with a clear error (which is allowed)
REFUSABLE = {"self"}

HOSTILE_NAMES = sorted(set(C_NAMES + GENERATED_NAMES + PYTHON_NAMES))
