"""A streaming load client for OpenAI-compatible servers (vLLM, SGLang, TGI, llama.cpp, ...).

One module per job: `records` (what one request measured, and its compact form in a result set),
`sse` (server-sent events read whole, however long a line), `client` (one streamed request),
`load` (arrival shapes and the driver that keeps them), `prompts` and `trace` (workloads),
`analysis` (TTFT, TPOT, ITL, throughput, goodput from the records), `server` (a server process a
case starts and stops), `fake_server` (a test and ceiling server, not a model), `plots`.

The package imports only the standard library, numpy and llmbench's base modules; aiohttp and
transformers are imported inside the functions that need them, so it imports without them.
"""
