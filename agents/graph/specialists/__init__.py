"""The three specialists, each a compiled subgraph: answer, extract, gate, correct, act."""
