"""Where ShopBot keeps its data: conversations, the shop and its refund ledger, checkpoints."""
