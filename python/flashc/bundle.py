"""A loaded flashc bundle: its kernels, programs and parameters, and launches
with torch tensors, raw device pointers and Python scalars (over the C ABI)."""

import collections
import ctypes
import os
import sys
import threading

from . import _lib
from .errors import InvalidArgumentError

Param = collections.namedtuple("Param", "name is_tensor dtype direction dims")
Param.__doc__ = ("A kernel or program parameter. dtype: 'bf16'|'f16'|'f32'|'i32' for tensors, "
                 "'f32'|'i32'|'i64' for scalars; direction: 'in'|'out'|'inout' (None for scalars); "
                 "dims: symbols or decimal literals as strings.")

TensorRef = collections.namedtuple("TensorRef", "ptr dtype shape strides")
TensorRef.__new__.__defaults__ = (None,)
TensorRef.__doc__ = ("A raw device tensor: pointer (int), dtype ('bf16', 'f16', 'f32', 'i32' or a torch dtype), "
                     "shape and strides in elements (strides None = dense row-major).")

_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "int32": "i32"}


def _is_torch_tensor(value):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


_dtype_names = {}  # torch dtype -> flashc name (every launch asks, per tensor)


def dtype_name(dtype):
    """'bf16'|'f16'|'f32'|'i32' for a flashc name or a torch dtype; None if neither."""
    if isinstance(dtype, str):
        return dtype if dtype in _lib.DTYPE_CODES else None
    try:
        return _dtype_names[dtype]
    except (KeyError, TypeError):
        pass
    text = str(dtype)
    name = _TORCH_DTYPES.get(text[len("torch."):]) if text.startswith("torch.") else None
    try:
        _dtype_names[dtype] = name
    except TypeError:
        pass
    return name


def _tensor_fields(name, value):
    """(ptr, dtype name, shape, strides) of a launch argument that is a tensor."""
    if _is_torch_tensor(value):
        dt = dtype_name(value.dtype)
        if dt is None:
            raise InvalidArgumentError("argument '%s': dtype %s is not supported by flashc (expected bfloat16, "
                                       "float16, float32 or int32)" % (name, value.dtype))
        if value.device.type != "cuda":
            raise InvalidArgumentError("argument '%s': expected a CUDA tensor, but got a tensor on %s"
                                       % (name, value.device))
        return value.data_ptr(), dt, tuple(value.shape), tuple(value.stride())
    if isinstance(value, (tuple, list)) and len(value) in (3, 4):
        ref = TensorRef(*value)
        dt = dtype_name(ref.dtype)
        if dt is None:
            raise InvalidArgumentError("argument '%s': unknown dtype %r (expected 'bf16', 'f16', 'f32', 'i32' or a "
                                       "torch dtype)" % (name, ref.dtype))
        try:
            ptr = int(ref.ptr or 0)
            shape = tuple(int(d) for d in ref.shape)
            strides = None if ref.strides is None else tuple(int(s) for s in ref.strides)
        except (TypeError, ValueError):
            raise InvalidArgumentError("argument '%s': expected (ptr, dtype, shape[, strides]) with integer "
                                       "pointer, shape and strides, got %r" % (name, value))
        if strides is not None and len(strides) != len(shape):
            raise InvalidArgumentError("argument '%s': %d strides for a rank-%d shape" % (name, len(strides), len(shape)))
        return ptr, dt, shape, strides
    raise InvalidArgumentError("argument '%s': expected a torch tensor or a (ptr, dtype, shape[, strides]) tuple "
                               "for a tensor parameter, got %s" % (name, type(value).__name__))


def _stream_handle(stream, args):
    """The CUstream for a launch: explicit, or torch's current stream for the device of the tensors."""
    if stream is None:
        for value in args.values():
            if _is_torch_tensor(value) and value.device.type == "cuda":
                import torch
                return torch.cuda.current_stream(value.device).cuda_stream
        return None
    if isinstance(stream, int):
        return stream or None
    if isinstance(stream, ctypes.c_void_p):
        return stream.value
    handle = getattr(stream, "cuda_stream", None)
    if handle is not None:
        return int(handle) or None
    raise InvalidArgumentError("stream: expected None, an int CUstream handle or a torch.cuda.Stream, got %s"
                               % type(stream).__name__)


def _workspace_fields(workspace):
    """(device pointer, bytes) of a launch's workspace: a torch CUDA tensor or a (ptr, nbytes) tuple."""
    if _is_torch_tensor(workspace):
        if not workspace.is_cuda or not workspace.is_contiguous():
            raise InvalidArgumentError("workspace: expected a contiguous CUDA tensor, got %s on %s"
                                       % ("a strided tensor" if workspace.is_cuda else "a tensor", workspace.device))
        return workspace.data_ptr(), workspace.numel() * workspace.element_size()
    if (isinstance(workspace, tuple) and len(workspace) == 2 and all(isinstance(v, int) for v in workspace)
            and workspace[1] >= 0):
        return workspace
    raise InvalidArgumentError("workspace: expected None, a torch CUDA tensor or a (ptr, nbytes) tuple, got %r"
                               % (workspace,))


_batches = threading.local()  # per thread: (tensor argument names) -> _TensorBatch


class _TensorBatch:
    """ctypes arrays for flashc_args_set_tensors: one launch's tensor arguments set in one call. Cached per thread
    and per tuple of argument names (a binding launches the same few programs over and over), so a launch fills
    in data pointers, shapes and strides only."""

    def __init__(self, names):
        n = len(names)
        self.count = n
        self.names = (ctypes.c_char_p * n)(*[name.encode() for name in names])
        self.tensors = (_lib.TensorArg * n)()
        self.dtypes = (ctypes.c_int * n)()
        self.ranks = (ctypes.c_int * n)()


def _fill_fast(batch, values):
    """Fills batch from plain torch CUDA tensors of a supported dtype and rank <= 4; False if any value is not one
    (then the caller binds tensor by tensor, which says what is wrong)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    tensor_type = torch.Tensor
    for i, value in enumerate(values):
        if type(value) is not tensor_type or not value.is_cuda:
            return False
        code = _lib.DTYPE_CODES.get(dtype_name(value.dtype))  # (dtype_name caches per dtype)
        if code is None:
            return False
        shape = value.shape
        rank = len(shape)
        if rank > 4:
            return False
        t = batch.tensors[i]
        t.data = value.data_ptr()
        t.shape[:rank] = shape
        t.stride[:rank] = value.stride()
        batch.dtypes[i] = code
        batch.ranks[i] = rank
    return True


class _Args:
    """An owned flashc_args handle."""

    def __init__(self):
        self.lib = _lib.load()
        handle = ctypes.c_void_p()
        _lib.check(self.lib.flashc_args_create(ctypes.byref(handle)))
        self.handle = handle

    def close(self):
        if self.handle:
            self.lib.flashc_args_destroy(self.handle)
            self.handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def set_tensor(self, name, ptr, dtype, shape, strides):
        rank = len(shape)
        shape_arr = (ctypes.c_int64 * max(rank, 1))(*shape)
        strides_arr = None if strides is None else (ctypes.c_int64 * max(rank, 1))(*strides)
        _lib.check(self.lib.flashc_args_set_tensor(self.handle, name.encode(), ctypes.c_void_p(ptr or None),
                                                   _lib.DTYPE_CODES[dtype], rank, shape_arr, strides_arr))

    def set_tensors(self, names, values):
        """Every tensor argument in one runtime call where they are plain torch CUDA tensors, else one by one."""
        key = tuple(names)
        cache = getattr(_batches, "by_names", None)
        if cache is None:
            cache = _batches.by_names = {}
        batch = cache.get(key)
        if batch is None:
            batch = cache[key] = _TensorBatch(names)
        if _fill_fast(batch, values):
            _lib.check(self.lib.flashc_args_set_tensors(self.handle, batch.count, batch.names, batch.tensors,
                                                        batch.dtypes, batch.ranks))
            return
        for name, value in zip(names, values):
            self.set_tensor(name, *_tensor_fields(name, value))

    def set_scalar(self, name, kind, value):
        """Checks value for scalar parameter `name` of type kind ('f32', 'i32', 'i64') and sets it."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidArgumentError("argument '%s': expected a Python number for scalar parameter of type %s, "
                                       "got %s" % (name, kind, type(value).__name__))
        if kind != "f32" and not isinstance(value, int):
            raise InvalidArgumentError("argument '%s': scalar parameter of type %s needs an int, got %r"
                                       % (name, kind, value))
        setter = {"f32": self.lib.flashc_args_set_f32, "i32": self.lib.flashc_args_set_i32,
                  "i64": self.lib.flashc_args_set_i64}[kind]
        _lib.check(setter(self.handle, name.encode(), float(value) if kind == "f32" else value))


class _KeptArgs:
    """An argument handle kept for one bundle entry and one set of argument names, per thread: a launch repeated
    with the same names (a training step, a decode loop) fills in its values only. Names, kinds and the missing
    ones were checked when it was made."""

    def __init__(self, args, tensor_names, scalar_kinds):
        self.args = args
        self.tensor_names = tensor_names
        self.batch = _TensorBatch(tensor_names)
        self.scalar_kinds = scalar_kinds  # (name, kind) of each scalar argument

    def fill(self, values):
        """True once every value is set; False (nothing reported) when a tensor argument is not a plain torch CUDA
        tensor (the caller then binds the slow way, which says what is wrong)."""
        if self.tensor_names:
            if not _fill_fast(self.batch, [values[n] for n in self.tensor_names]):
                return False
            batch = self.batch
            _lib.check(self.args.lib.flashc_args_set_tensors(self.args.handle, batch.count, batch.names,
                                                             batch.tensors, batch.dtypes, batch.ranks))
        for name, kind in self.scalar_kinds:
            self.args.set_scalar(name, kind, values[name])
        return True


class Bundle:
    """A bundle directory opened with the runtime.

    Bundle(path, cache_dir=None, disable_cache=False, no_jit=None, device_include_dir=None):
    no_jit None follows FLASHC_NO_JIT, True allows cubins only, False allows JIT regardless.
    """

    def __init__(self, path, cache_dir=None, disable_cache=False, no_jit=None, device_include_dir=None):
        self.path = os.fspath(path)
        self._lib = _lib.load()
        self._handle = None
        options = _lib.OpenOptions()
        options.cache_dir = cache_dir.encode() if cache_dir else None
        options.disable_cache = 1 if disable_cache else 0
        options.no_jit = 0 if no_jit is None else (1 if no_jit else -1)
        options.device_include_dir = device_include_dir.encode() if device_include_dir else None
        handle = ctypes.c_void_p()
        _lib.check(self._lib.flashc_bundle_open_ex(self.path.encode(), ctypes.byref(options), ctypes.byref(handle)))
        self._handle = handle
        self._params = {}
        self._param_maps = {}
        self._workspace_sizes = {}  # (program, argument shapes and devices) -> bytes
        self._local = threading.local()  # per thread: kept argument handles (_kept_args)
        self.kernels = self._names(self._lib.flashc_bundle_kernel_count, self._lib.flashc_bundle_kernel_name)
        self.programs = self._names(self._lib.flashc_bundle_program_count, self._lib.flashc_bundle_program_name)

    # -- introspection -----------------------------------------------------
    def _names(self, count_fn, name_fn):
        count = ctypes.c_size_t()
        _lib.check(count_fn(self._require(), ctypes.byref(count)))
        names = []
        for i in range(count.value):
            text = ctypes.c_char_p()
            _lib.check(name_fn(self._handle, i, ctypes.byref(text)))
            names.append(text.value.decode())
        return names

    def _require(self):
        if not self._handle:
            raise InvalidArgumentError("bundle %s is closed" % self.path)
        return self._handle

    def is_program(self, name):
        """True for a program, False for a kernel; NotFoundError otherwise."""
        flag = ctypes.c_int()
        _lib.check(self._lib.flashc_bundle_lookup(self._require(), name.encode(), ctypes.byref(flag)))
        return bool(flag.value)

    def params(self, name):
        """Parameters of kernel or program `name` (a program's: union by name, minus scratch), in order."""
        cached = self._params.get(name)
        if cached is not None:
            return list(cached)
        count = ctypes.c_size_t()
        _lib.check(self._lib.flashc_bundle_param_count(self._require(), name.encode(), ctypes.byref(count)))
        params = []
        for i in range(count.value):
            info = _lib.ParamInfo()
            _lib.check(self._lib.flashc_bundle_param_info(self._handle, name.encode(), i, ctypes.byref(info)))
            if info.is_tensor:
                params.append(Param(info.name.decode(), True, _lib.DTYPE_NAMES.get(info.dtype, str(info.dtype)),
                                    _lib.DIRECTION_NAMES.get(info.direction, str(info.direction)),
                                    tuple(info.dims[j].decode() for j in range(info.rank))))
            else:
                params.append(Param(info.name.decode(), False, _lib.SCALAR_NAMES.get(info.dtype, str(info.dtype)),
                                    None, ()))
        self._params[name] = tuple(params)
        return params

    def _param_map(self, name):
        found = self._param_maps.get(name)
        if found is None:
            found = self._param_maps[name] = {p.name: p for p in self.params(name)}
        return found

    # -- argument binding --------------------------------------------------
    def _classify(self, name, arg_names, partial):
        """(tensor argument names, [(scalar argument name, kind)]) of `name`'s arguments; errors for an unknown
        name and, unless partial, for a missing one."""
        params = self._param_map(name)
        tensor_names, scalar_kinds = [], []
        for arg_name in arg_names:
            param = params.get(arg_name)
            if param is None:
                raise InvalidArgumentError("'%s' has no parameter '%s' (parameters: %s)"
                                           % (name, arg_name, ", ".join(params) or "none"))
            if param.is_tensor:
                tensor_names.append(arg_name)
            else:
                scalar_kinds.append((arg_name, param.dtype))
        if not partial:
            missing = [p for p in params if p not in arg_names]
            if missing:
                raise InvalidArgumentError("'%s' is missing argument%s %s" % (
                    name, "s" if len(missing) > 1 else "", ", ".join("'%s'" % m for m in missing)))
        return tensor_names, scalar_kinds

    def _bind(self, name, args, partial):
        tensor_names, scalar_kinds = self._classify(name, args, partial)
        bound = _Args()
        try:
            for arg_name, kind in scalar_kinds:
                bound.set_scalar(arg_name, kind, args[arg_name])
            if tensor_names:
                bound.set_tensors(tensor_names, [args[n] for n in tensor_names])
        except BaseException:
            bound.close()
            raise
        return bound

    _MAX_KEPT_ARGS = 64

    def _kept_args(self, name, args):
        """This thread's kept argument handle for `name` and these argument names, filled with args' values; None
        when a value is not a plain torch CUDA tensor or number (the caller binds the slow way)."""
        kept = getattr(self._local, "kept", None)
        if kept is None:
            kept = self._local.kept = {}
        key = (name, tuple(args))
        entry = kept.get(key)
        if entry is None:
            tensor_names, scalar_kinds = self._classify(name, args, partial=False)
            if len(kept) >= self._MAX_KEPT_ARGS:  # many argument sets: start over
                for old in kept.values():
                    old.args.close()
                kept.clear()
            entry = kept[key] = _KeptArgs(_Args(), tensor_names, scalar_kinds)
        return entry.args if entry.fill(args) else None

    def param_shape(self, name, param, **args):
        """Shape of tensor parameter `param` of `name` implied by the given arguments."""
        bound = self._bind(name, args, partial=True)
        try:
            rank = ctypes.c_int()
            shape = (ctypes.c_int64 * 4)()
            _lib.check(self._lib.flashc_bundle_param_shape(self._require(), name.encode(), param.encode(), bound.handle,
                                                           ctypes.byref(rank), shape))
            return tuple(shape[i] for i in range(rank.value))
        finally:
            bound.close()

    def allocate_outputs(self, name, fill=None, **args):
        """torch tensors for every 'out' parameter of `name` not among args, shaped by
        flashc_bundle_param_shape, on the device of the first tensor argument (fill: optional value).
        A 16-bit output of rank >= 2 whose width is not a multiple of 8 (an FFN width such as 77) gets rows
        padded to 16 bytes, as the kernels need (torch.empty_strided: rows 80 apart for a width of 77)."""
        import torch
        device = next((v.device for v in args.values() if _is_torch_tensor(v)), None)
        if device is None:
            raise InvalidArgumentError("allocate_outputs: at least one torch tensor argument is needed to pick a device")
        dtypes = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "i32": torch.int32}
        out = {}
        for p in self.params(name):
            if p.is_tensor and p.direction == "out" and p.name not in args:
                shape = self.param_shape(name, p.name, **args)
                if p.dtype in ("bf16", "f16") and len(shape) >= 2 and shape[-1] % 8:
                    strides, step = [1] * len(shape), shape[-1] + (-shape[-1]) % 8
                    for i in range(len(shape) - 2, -1, -1):
                        strides[i] = step
                        step *= max(shape[i], 1)
                    t = torch.empty_strided(shape, tuple(strides), dtype=dtypes[p.dtype], device=device)
                else:
                    t = torch.empty(shape, dtype=dtypes[p.dtype], device=device)
                if fill is not None:
                    t.fill_(fill)
                out[p.name] = t
        return out

    # -- execution ---------------------------------------------------------
    def prepare(self):
        """Load (and if needed compile) the code for the current device now; launches do it lazily."""
        _lib.check(self._lib.flashc_bundle_prepare(self._require()))

    def launch(self, name, stream=None, workspace=None, **args):
        """Validate and launch kernel or program `name` asynchronously on `stream`.

        Tensor arguments: torch CUDA tensors or (ptr, dtype, shape[, strides]) tuples; scalars: Python
        numbers. stream None: torch's current stream for the tensors' device (NULL without torch tensors).
        workspace: None (a program's scratch comes from the runtime's pool), or device memory for it that the
        caller keeps until the launch's work on the stream is done: a torch CUDA tensor (contiguous, 256-byte
        aligned, at least workspace_bytes(name, ...) bytes) or a (ptr, nbytes) tuple; or a callable
        allocate(nbytes) returning such memory, called with what these arguments need when they need any.
        A launch repeated with the same argument names on one thread reuses its argument handle, and the runtime
        its validated plan when shapes, strides, dtypes and scalars repeat.
        """
        handle = self._require()
        bound = self._kept_args(name, args)
        owned = bound is None
        if owned:
            bound = self._bind(name, args, partial=False)
        try:
            stream_handle = _stream_handle(stream, args)
            if callable(workspace):
                nbytes = ctypes.c_uint64()
                _lib.check(self._lib.flashc_workspace_bytes(handle, name.encode(), bound.handle,
                                                            ctypes.byref(nbytes)))
                workspace = workspace(nbytes.value) if nbytes.value else None
            if workspace is None:
                _lib.check(self._lib.flashc_launch(handle, name.encode(), bound.handle,
                                                   ctypes.c_void_p(stream_handle)))
            else:
                ptr, nbytes = _workspace_fields(workspace)
                _lib.check(self._lib.flashc_launch_workspace(handle, name.encode(), bound.handle,
                                                             ctypes.c_void_p(stream_handle), ctypes.c_void_p(ptr),
                                                             nbytes))
        finally:
            if owned:
                bound.close()

    def defer_checks(self, defer=True):
        """Programs that check their inputs on the device (decode's cache lengths and pages, packed sequences'
        offsets) raise on a bad entry at the launch, which then waits for the program. defer_checks(True): launches
        return at once; a bad entry raises at this bundle's next program launch (not made then) or at
        check_deferred(). The bad launch's kernels write nothing either way."""
        _lib.check(self._lib.flashc_bundle_defer_checks(self._require(), int(bool(defer))))

    def check_deferred(self, wait=True):
        """Raises the first bad verdict of the deferred launches so far (wait: after waiting for all of them)."""
        _lib.check(self._lib.flashc_bundle_check_deferred(self._require(), int(bool(wait))))

    def workspace_bytes(self, name, **args):
        """Bytes of workspace program `name` needs for these arguments on the current device (its scratch tensors
        at 256-byte aligned offsets; 0 for a kernel or a program without scratch). Asked of the runtime once for
        each set of torch tensor shapes and scalar values on the current device (scratch sizes follow from the
        shapes), then remembered."""
        handle = self._require()
        key = None
        values = tuple(args.values())
        tensors = [v for v in values if _is_torch_tensor(v)]
        if tensors and all(_is_torch_tensor(v) or type(v) in (int, float) for v in values):
            import torch
            key = (name, tuple(args), tuple(v.shape if _is_torch_tensor(v) else v for v in values),
                   torch.cuda.current_device())
            found = self._workspace_sizes.get(key)
            if found is not None:
                return found
        bound = self._bind(name, args, partial=False)
        try:
            nbytes = ctypes.c_uint64()
            _lib.check(self._lib.flashc_workspace_bytes(handle, name.encode(), bound.handle, ctypes.byref(nbytes)))
        finally:
            bound.close()
        if key is not None:
            if len(self._workspace_sizes) >= 4096:  # many shapes (e.g. every sequence length): start over
                self._workspace_sizes.clear()
            self._workspace_sizes[key] = nbytes.value
        return nbytes.value

    # -- lifetime ----------------------------------------------------------
    def close(self):
        if getattr(self, "_handle", None):
            self._lib.flashc_bundle_close(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return "flashc.Bundle(%r, kernels=%r, programs=%r)" % (self.path, self.kernels, self.programs)
