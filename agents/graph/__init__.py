"""The graph: parent, state, the three specialists, their tools, prompts and gates' adapter."""
