"""The only package that imports litellm: streaming calls, token counting, model facts."""
