#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Export any PyTorch module as a stepsim `layers` model (issue 16 item 4).

Given an importable constructor (``torchvision.models:resnet18``, ``my_model.py:GPT``) and
example inputs, it runs one forward and one backward on the CPU and writes, per layer:

* the trainable (and frozen) parameters in registration order (``model.named_parameters()``),
  which is what PyTorch DDP's buckets follow (semantics.md §A.1), with their dtypes;
* the forward FLOPs per sample of its matmuls and convolutions with a weight
  (``fwd_flops_per_token``: 2 per multiply-add), and of its matmuls between two activations
  (attention's QK^T and PV), per sample and per key (``attn_flops_per_token_per_seq``:
  divided by the sequence length of token inputs);
* the bytes autograd saves for backward (``activation_bytes_per_token``: every tensor a
  ``saved_tensors_hooks`` pack hook sees that is not a parameter, each storage once), the
  layer's input (``input_bytes_per_token``), and the input and output bytes of its modules
  that are neither linear nor convolutions (norms, activations, pooling, embeddings:
  ``streaming_bytes_per_token``).

A sample is a token when the first input holds integers (token ids, ``[batch, seq]``: samples
= batch x seq, and the scenario's ``batch.seq_len`` should be that seq), else one item of the
batch (an image: run the scenario with ``seq_len`` 1).

Layers: the root module is split into its children; a child is split further when it is a
stack of blocks (an ``nn.ModuleList`` or ``nn.Sequential`` whose children all share one class,
ResNet's ``layer1``, GPT's ``h``) or holds one directly (GPT's ``transformer``). Modules
outside the stacks are marked ``root`` (FSDP's root unit: embeddings, stems, heads).

FLOPs are counted at the function level (``torch.overrides.TorchFunctionMode``): ``F.linear``,
``F.conv1d/2d/3d``, ``torch.matmul`` / ``@``, ``mm``, ``bmm``, ``addmm``, ``baddbmm`` and
``F.scaled_dot_product_attention`` (causal: half the scores). Elementwise work inside a
module's own ``forward`` (a residual add written as ``x + y``) is not counted as streaming
bytes: only modules' inputs and outputs are.

The output is written atomically; an existing file is kept unless ``--force`` is given.
Exit status 2 with one line on a bad constructor, input or output path.
"""

import argparse
import importlib
import importlib.util
import json
import os
import sys
import tempfile


def fail(message):
    print(f"export_model: {message}", file=sys.stderr)
    sys.exit(2)


def load_constructor(spec):
    """'package.module:attr' or 'path/to/file.py:attr' -> the callable."""
    if ":" not in spec:
        fail(f"constructor '{spec}': expected MODULE:NAME or FILE.py:NAME (e.g. torchvision.models:resnet18)")
    where, name = spec.rsplit(":", 1)
    try:
        if where.endswith(".py"):
            if not os.path.isfile(where):
                fail(f"constructor '{spec}': no file '{where}'")
            module_spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(where))[0], where)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except SystemExit:
        raise
    except Exception as e:  # an import error of the user's module, whatever it is
        fail(f"constructor '{spec}': cannot import '{where}': {type(e).__name__}: {e}")
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            fail(f"constructor '{spec}': '{where}' has no attribute '{name}'")
        obj = getattr(obj, part)
    if not callable(obj):
        fail(f"constructor '{spec}': '{name}' is not callable")
    return obj


def parse_shape(text):
    try:
        shape = [int(x) for x in text.split(",")]
    except ValueError:
        fail(f"--input '{text}': expected comma-separated positive integers, e.g. 1,3,224,224")
    if not shape or any(d <= 0 for d in shape) or len(shape) > 8:
        fail(f"--input '{text}': expected 1 to 8 positive dimensions, e.g. 1,3,224,224")
    return shape


STEPSIM_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def split_layers(torch, model):
    """[(layer name, module, is_root)] in registration order (see the module doc)."""
    nn = torch.nn

    def is_stack(m):
        kids = list(m.children())
        return isinstance(m, (nn.ModuleList, nn.Sequential)) and len(kids) > 0 and \
            len({type(k) for k in kids}) == 1 and any(True for _ in m.parameters())

    def holds_stack(m):
        return any(is_stack(k) for k in m.children())

    out = []

    def visit(prefix, m, root, in_stack):
        own = list(m.named_parameters(recurse=False))
        kids = list(m.named_children())
        split = root or is_stack(m) or holds_stack(m)
        if not split or not kids:
            out.append((prefix or "model", m, not in_stack))
            return
        if own:  # parameters registered on the split module itself come first
            out.append(((prefix + "." if prefix else "") + "params", m, True))
        for name, k in kids:
            visit((prefix + "." if prefix else "") + name, k, False, in_stack or is_stack(m))

    visit("", model, True, False)
    return out


def export(args):
    try:
        import torch
    except ImportError:
        fail("PyTorch is not installed (Debian: apt-get install python3-torch python3-torchvision)")
    from torch.overrides import TorchFunctionMode

    ctor = load_constructor(args.constructor)
    try:
        kwargs = json.loads(args.kwargs) if args.kwargs else {}
    except json.JSONDecodeError as e:
        fail(f"--kwargs: not JSON: {e}")
    if not isinstance(kwargs, dict):
        fail("--kwargs: expected a JSON object of keyword arguments")
    torch.manual_seed(0)
    try:
        model = ctor(**kwargs)
    except Exception as e:
        fail(f"constructor '{args.constructor}' raised {type(e).__name__}: {e}")
    if not isinstance(model, torch.nn.Module):
        fail(f"constructor '{args.constructor}' returned a {type(model).__name__}, not a torch.nn.Module")
    model.train()

    inputs = []
    for text in args.input:
        shape = parse_shape(text)
        if args.input_dtype == "long":
            vocab = args.vocab
            inputs.append(torch.randint(0, vocab, shape))
        else:
            inputs.append(torch.randn(shape))
    first = inputs[0]
    token_input = not first.is_floating_point()
    samples = first.numel() if token_input else first.shape[0]
    seq = first.shape[-1] if token_input and first.dim() >= 2 else 1

    layers = split_layers(torch, model)
    module_layer = {}
    for index, (_, module, _) in enumerate(layers):
        for m in module.modules():
            module_layer.setdefault(id(m), index)
    param_ids = {id(p) for p in model.parameters()}
    param_ptrs = {p.data_ptr() for p in model.parameters()}
    stats = [dict(gemm=0.0, attn=0.0, saved=0.0, stream=0.0, input=0.0) for _ in layers]
    stack = []

    def current():
        return stack[-1] if stack else None

    def pre_hook(module, inp):
        stack.append(module_layer.get(id(module), current()))
        # The layer's input: the first tensor argument of its top module.
        index = module_layer.get(id(module))
        if index is not None and layers[index][1] is module:
            t = next((x for x in inp if torch.is_tensor(x)), None)
            if t is not None:
                stats[index]["input"] += t.numel() * t.element_size()

    streaming_types = (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)

    def post_hook(module, inp, out):
        index = stack.pop()
        if index is None or any(True for _ in module.children()) or isinstance(module, streaming_types):
            return
        tensors = [x for x in inp if torch.is_tensor(x)]
        outs = out if isinstance(out, (tuple, list)) else [out]
        tensors += [x for x in outs if torch.is_tensor(x)]
        stats[index]["stream"] += sum(t.numel() * t.element_size() for t in tensors)

    handles = []
    for m in model.modules():
        handles.append(m.register_forward_pre_hook(pre_hook))
        handles.append(m.register_forward_hook(post_hook))

    F = torch.nn.functional
    conv_fns = {F.conv1d, F.conv2d, F.conv3d}
    matmul_fns = {torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.Tensor.mm,
                  torch.bmm, torch.Tensor.bmm}
    sdpa = getattr(F, "scaled_dot_product_attention", None)

    def has_param(*xs):
        return any(id(x) in param_ids for x in xs if torch.is_tensor(x))

    class Counter(TorchFunctionMode):
        def __torch_function__(self, func, types, a=(), kw=None):
            kw = kw or {}
            out = func(*a, **kw)
            index = current()
            if index is None:
                return out
            if func is F.linear:
                x, w = a[0], a[1] if len(a) > 1 else kw["weight"]
                stats[index]["gemm"] += 2.0 * x.numel() * w.shape[0]
            elif func in conv_fns:
                w = a[1] if len(a) > 1 else kw["weight"]
                per_output = w[0].numel()  # input channels per group x kernel
                stats[index]["gemm"] += 2.0 * out.numel() * per_output
            elif func in matmul_fns or func in (torch.addmm, torch.baddbmm, torch.Tensor.addmm):
                m1, m2 = (a[1], a[2]) if func in (torch.addmm, torch.baddbmm, torch.Tensor.addmm) else (a[0], a[1])
                flops = 2.0 * out.numel() * m1.shape[-1]
                stats[index]["gemm" if has_param(m1, m2) else "attn"] += flops
            elif sdpa is not None and func is sdpa:
                q, k, v = a[0], a[1], a[2]
                causal = kw.get("is_causal", False)
                flops = 2.0 * q.numel() * k.shape[-2] + 2.0 * q.shape[:-1].numel() * k.shape[-2] * v.shape[-1]
                stats[index]["attn"] += flops / (2.0 if causal else 1.0)
            return out

    seen = set()

    def pack(t):
        index = current()
        key = (t.data_ptr(), t.numel(), t.dtype)
        if index is not None and t.data_ptr() not in param_ptrs and key not in seen:
            seen.add(key)
            stats[index]["saved"] += t.numel() * t.element_size()
        return t

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), Counter():
            out = model(*inputs)
    except Exception as e:
        fail(f"the forward on --input {' '.join(args.input)} raised {type(e).__name__}: {e}")
    for h in handles:
        h.remove()
    loss = out if torch.is_tensor(out) else (out[0] if isinstance(out, (tuple, list)) else None)
    if loss is None or not torch.is_tensor(loss) or not loss.is_floating_point():
        fail("the model's output is not a floating-point tensor (or a tuple starting with one) to run backward on")
    loss.float().sum().backward()  # checks the graph is trainable

    rows = []
    emitted = set()  # a tied parameter (GPT's lm_head.weight is wte.weight) is listed once, where first registered
    for (name, module, root), st in zip(layers, stats):
        own_only = name.endswith("params") and any(True for _ in module.children())
        params = [(n, p) for n, p in module.named_parameters(recurse=not own_only) if id(p) not in emitted]
        emitted.update(id(p) for _, p in params)
        prefix = name[: -len("params")] if own_only else (name + "." if name != "model" else "")
        tensors = [{"name": prefix + pname, "numel": p.numel(),
                    "dtype": STEPSIM_DTYPES.get(str(p.dtype).replace("torch.", ""), "fp32"),
                    **({} if p.requires_grad else {"trainable": False})} for pname, p in params]
        row = {"name": name, "params": tensors,
               "fwd_flops_per_token": st["gemm"] / samples}
        if st["attn"] > 0:
            row["attn_flops_per_token_per_seq"] = st["attn"] / samples / seq
        for key, value in (("streaming_bytes_per_token", st["stream"]), ("activation_bytes_per_token", st["saved"]),
                           ("input_bytes_per_token", st["input"])):
            if value > 0:
                row[key] = value / samples
        if root:
            row["root"] = True
        if tensors or row["fwd_flops_per_token"] > 0 or "streaming_bytes_per_token" in row:
            rows.append(row)
    total = sum(t["numel"] for r in rows for t in r["params"])
    expected = sum(p.numel() for p in model.parameters())
    if total != expected:
        fail(f"internal: exported {total} parameters of the model's {expected}")
    name = args.name or args.constructor.rsplit(":", 1)[1]
    return {
        "name": name,
        "kind": "layers",
        "source": (f"exported by tools/export_model.py from {args.constructor}"
                   f"{' ' + json.dumps(kwargs, sort_keys=True) if kwargs else ''} with input "
                   f"{' '.join(args.input)} ({'token ids' if token_input else 'float'}; a sample is "
                   f"{'a token' if token_input else 'one item of the batch'}) on torch {torch.__version__}"),
        "layers": rows,
    }


def write_atomically(path, text, force):
    if os.path.exists(path) and not force:
        fail(f"--out '{path}' exists; give --force to replace it")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        fail(f"--out '{path}': no folder '{folder}'")
    fd, tmp = tempfile.mkstemp(prefix=".export_model.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main(argv=None):
    p = argparse.ArgumentParser(description="Export a PyTorch module as a stepsim `layers` model.")
    p.add_argument("constructor", help="MODULE:NAME or FILE.py:NAME returning an nn.Module (torchvision.models:resnet18)")
    p.add_argument("--input", action="append", required=True,
                   help="an example input's shape, comma-separated (repeat for several inputs): 1,3,224,224")
    p.add_argument("--input-dtype", choices=["float", "long"], default="float",
                   help="float tensors (images, features) or long token ids in [0, --vocab)")
    p.add_argument("--vocab", type=int, default=1000, help="token ids' range for --input-dtype long")
    p.add_argument("--kwargs", help="JSON object of keyword arguments for the constructor")
    p.add_argument("--name", help="the model's name (default: the constructor's)")
    p.add_argument("--out", "-o", required=True, help="the model .json to write ('-': standard output)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    args = p.parse_args(argv)
    if args.vocab <= 0:
        fail(f"--vocab {args.vocab}: expected a positive integer")
    text = json.dumps(export(args), indent=1) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        write_atomically(args.out, text, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
