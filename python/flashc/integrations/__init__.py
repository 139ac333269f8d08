"""Integrations of flashc with other libraries, each in its own submodule and each optional:

    flashc.integrations.transformers   Hugging Face transformers (AttentionInterface): register()

Importing this package imports neither torch nor any integrated library; a submodule imports its library only
when it is used.
"""

__all__ = ["transformers"]
