"""A streaming load client for OpenAI-compatible servers (vLLM, SGLang, TGI, llama.cpp, ...), one module per
job. It imports only the standard library, numpy and llmbench's base modules; aiohttp and transformers are
imported inside the functions that need them."""
