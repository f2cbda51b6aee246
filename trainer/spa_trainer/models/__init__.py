"""The policy model: loading `tiny` or a local HF folder, and building `tiny` with its tokenizer."""
