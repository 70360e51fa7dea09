"""ShopBot under a LangGraph server: the graph module and the auth module `langgraph.json` names."""
