"""The models: Mistral, retries, streaming, and the offline demo model."""
