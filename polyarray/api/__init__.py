"""The ``pa.*`` functions, one face module per concept, named as the node
builders' modules in :mod:`polyarray.ops` that they call:

=============  ==============================================================
``creation``   array, asarray, placeholder, zeros/ones/full/empty(_like), arange,
               linspace, eye, identity, tri
``elementwise`` the ufuncs and composed ufuncs (fmod, frexp, ldexp, gcd, ...),
               where, clip, round, astype, isclose/allclose, array_equal/equiv,
               select, piecewise, sinc, nan_to_num, real/imag/conj
``reductions`` sum, prod, max, min, any, all, argmax/argmin, mean, var, std, the
               nan* family, ptp, average, count_nonzero, cov, corrcoef
``matrices``   einsum, matmul, dot, tensordot, vdot, inner, outer, kron, cross,
               vecdot, diag, diagonal, trace, tril, triu, tril/triu_indices
``shapes``     reshape, ravel, transpose, permute_dims, moveaxis, swapaxes,
               broadcast_to/arrays, expand_dims, squeeze, flip, concatenate, stack
``arrange``    atleast_*d, hstack/vstack/dstack/column_stack, unstack, meshgrid,
               indices, tile, repeat, roll, diff, ediff1d, pad, fliplr/flipud,
               rot90, the split family, append, insert, delete
``ranges``     logspace, geomspace
``polynomials`` polyval, vander, convolve, correlate
``calculus``   gradient, trapezoid, interp, unwrap
``indexing``   take, take_along_axis, nonzero, argwhere, flatnonzero
``ordering``   sort, argsort, partition, argpartition, lexsort, searchsorted,
               isin, unique and its family
``quantiles``  median, quantile, percentile, nanmedian, nanquantile, nanpercentile
``histograms`` digitize, histogram, histogram2d, bincount (eager)
``scans``      cumsum, cumprod, cumulative_sum, cumulative_prod
``dtypes``     result_type, can_cast, finfo, iinfo, isdtype
``custom``     elementwise_kernel, reduction_kernel (CuPy-style user kernels)
``raw``        raw_kernel, RawKernel (a user's CUDA or OpenCL source)
=============  ==============================================================

Each function unwraps its array arguments (``pa.Array`` -> node), calls the
node builder of the same name, and wraps the result in an ``Array``;
NumPy's rules and errors live in the builders.  ``pa.linalg`` is
:mod:`polyarray.linalg` and ``pa.random`` :mod:`polyarray.random`."""
