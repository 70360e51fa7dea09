"""The tools the specialists may call: shop tools and hand-offs."""
