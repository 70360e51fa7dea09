"""`shopbot eval`: scripted customers against a model, pass^k per flow, safety checked.

Flows are data (`flows/*.toml`, format in docs/eval.md); `runner` plays them through the
engine, each try in a throwaway home; `checks` and `violations` read what each left behind;
`metrics` turns the tries into pass^k and latency percentiles.
"""
