"""``python -m kgos.embed``: list embedders, build the static model, embed text from the shell.

python -m kgos.embed list [--json]
python -m kgos.embed build-static [OUT_DIR] [--pca-dims 256] [--source DIR] [--overwrite]
python -m kgos.embed build-fast [OUT_DIR] [--overwrite]   # the fast tier, from the default model, no torch
python -m kgos.embed build-fast --package                # rebuild the packaged fast tier, check its sha256
python -m kgos.embed build-q8 [OUT_DIR] [--overwrite]     # minilm-q8: the default model with int8 products
python -m kgos.embed embed SPEC TEXT...          # prints one JSON vector per line
"""

from __future__ import annotations

import argparse
import json
import sys

from kgos.errors import KGOSError


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kgos.embed", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p_list = sub.add_parser("list", help="embedders and whether their dependencies are installed")
    p_list.add_argument("--json", action="store_true")
    p_build = sub.add_parser("build-static", help="distill the static MiniLM model (needs kgos[distill])")
    p_build.add_argument("out_dir", nargs="?", default=None)
    p_build.add_argument("--pca-dims", type=int, default=256)
    p_build.add_argument("--source", default=None, help="a sentence-transformers folder of all-MiniLM-L6-v2")
    p_build.add_argument("--overwrite", action="store_true")
    p_fast = sub.add_parser("build-fast", help="distill the fast tier from the default ONNX model (core packages)")
    p_fast.add_argument("out_dir", nargs="?", default=None)
    p_fast.add_argument("--overwrite", action="store_true")
    p_fast.add_argument("--package", action="store_true", help="rebuild the copy shipped in kgos/embed/assets")
    p_q8 = sub.add_parser("build-q8", help="build minilm-q8 from the default ONNX model (core packages, ~4 s)")
    p_q8.add_argument("out_dir", nargs="?", default=None)
    p_q8.add_argument("--overwrite", action="store_true")
    p_embed = sub.add_parser("embed", help="embed texts, one JSON array per line")
    p_embed.add_argument("spec")
    p_embed.add_argument("texts", nargs="+")
    args = ap.parse_args(argv)

    try:
        if args.cmd == "list":
            from .registry import available_embedders

            rows = available_embedders()
            if args.json:
                print(json.dumps([r.to_dict() for r in rows], indent=2))
            else:
                for r in rows:
                    state = "ready" if r.installed else "missing: " + ", ".join(r.missing)
                    extra = f"kgos[{r.extra}]" if r.extra else "core"
                    mark = "*" if r.is_default else " "
                    print(f"{mark} {r.spec:32} {r.name:30} {r.dims or '?'!s:>5}  {extra:14} {state}")
        elif args.cmd == "build-static":
            from .static import build_static_model

            out = build_static_model(
                args.out_dir, source=args.source, pca_dims=args.pca_dims, overwrite=args.overwrite
            )
            print(f"static model written to {out}")
        elif args.cmd == "build-fast":
            return _build_fast(args.out_dir, args.overwrite, args.package)
        elif args.cmd == "build-q8":
            from .quantised import build_quantised, ensure_quantised

            out = build_quantised(args.out_dir, overwrite=True) if args.overwrite else ensure_quantised(args.out_dir)
            print(f"minilm-q8 model at {out}")
        elif args.cmd == "embed":
            from .registry import get_embedder

            emb = get_embedder(args.spec)
            for v in emb.embed(args.texts):
                print(json.dumps([round(float(x), 6) for x in v]))
    except KGOSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _build_fast(out_dir: str | None, overwrite: bool, package: bool) -> int:
    """build-fast: into OUT_DIR (default this KGOS_HOME), or the packaged copy (exit 1 when its sha256
    differs from the pinned one: the build did not reproduce the shipped file)."""
    from .static import FAST_STATIC_SHA256, build_packaged_fast, distill_onnx, ensure_fast_static

    if not package:
        out = distill_onnx(out_dir, overwrite=True) if overwrite else ensure_fast_static(out_dir)
        print(f"fast static model at {out}")
        return 0
    out, sha = build_packaged_fast()
    same = sha == FAST_STATIC_SHA256
    print(f"packaged fast tier rebuilt at {out}\nsha256 {sha}: "
          + ("the pinned file, byte for byte" if same else f"differs from the pinned {FAST_STATIC_SHA256}"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
