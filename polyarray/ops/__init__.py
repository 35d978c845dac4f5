"""Node builders: each function takes nodes (or host data and Python
scalars) and returns the node NumPy's rules give, with NumPy's errors.
They never see a ``pa.Array``: ``polyarray.api`` and the methods of
``polyarray.array.Array`` unwrap their arguments, call these and wrap the
result.  Below them: ``dtypes`` (supported dtypes, promotion), ``axes``
(axis arguments) and ``inputs`` (host arrays accepted as data)."""
