"""Parameter sets the variant guarantees are proved at: each kind at the starter deck's
parameters (cards/content/attention-and-transformers.yaml) and at the largest allowed."""

PARAMETER_SETS: list[tuple[str, dict]] = [
    # The starter deck.
    ("attention", {"n": 3, "d_k": 2, "d_v": 2, "mask": "none", "scale": True}),
    ("attention", {"n": 3, "d_k": 2, "d_v": 2, "mask": "causal", "scale": True}),
    ("projection", {"preset": "lesson"}),
    ("projection", {"preset": "lesson", "mask": "causal"}),
    ("causal", {"n": 3, "d_k": 2}),
    ("causal", {"n": 3, "d_k": 2, "predict": "top_key"}),
    ("padding", {"n_real": 2, "n_pad": 1}),
    ("multi_head", {"n": 3, "heads": 2, "d_head": 2}),
    ("shapes", {"n": 6, "heads": 2, "d_head": 4}),
    ("positional_encoding", {"d_model": 4, "positions": 2}),
    ("scaling", {"d_k": 16, "n": 3}),
    ("scaling", {"d_k": 16, "n": 3, "predict": "scale_effect"}),
    ("ablation", {"n_inputs": 3, "n": 3}),
    ("cost", {"n": 4096, "d_model": 1024, "heads": 16, "layers": 24}),
    # The largest allowed.
    ("attention", {"n": 8, "d_k": 8, "d_v": 8, "max_abs": 5, "mask": "padding"}),
    ("attention", {"n": 8, "d_k": 8, "d_v": 8, "max_abs": 5, "mask": "causal"}),
    (
        "projection",
        {"preset": "random", "n": 8, "d_model": 8, "d_k": 8, "x": "integers", "mask": "causal"},
    ),
    ("causal", {"n": 8, "d_k": 8}),
    ("padding", {"n_real": 6, "n_pad": 2, "d_k": 8}),
    ("multi_head", {"n": 8, "heads": 4, "d_head": 4, "mask": "causal"}),
    ("shapes", {"n": 4096, "heads": 64, "d_head": 256}),
    ("positional_encoding", {"d_model": 64, "positions": 4, "max_position": 1000}),
    ("positional_encoding", {"d_model": 64, "positions": 4, "layout": "sines_then_cosines"}),
    ("scaling", {"d_k": 1024, "n": 6}),
    ("scaling", {"d_k": 4, "n": 6}),
    ("scaling", {"d_k": 1024, "n": 6, "predict": "scale_effect"}),
    ("attention", {"n": 8, "d_k": 8, "d_v": 8, "max_abs": 5, "predict": "top_key"}),
    ("ablation", {"n_inputs": 5, "n": 5}),
    ("ablation", {"n_inputs": 5, "n": 5, "case": "reliance"}),
    ("ablation", {"n_inputs": 5, "n": 5, "case": "redundant"}),
    (
        "cost",
        {
            "n": 1_048_576,
            "d_model": 65_536,
            "heads": 256,
            "layers": 512,
            "bytes_per_entry": 4,
        },
    ),
]
